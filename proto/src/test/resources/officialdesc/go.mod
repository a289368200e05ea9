// Helper module for CsiProtoConformanceTest: prints the official CSI v1.12.0
// FileDescriptorProto. go.sum is created at test time in a temp copy.
module hearth/officialdesc

go 1.23.0

require (
	github.com/container-storage-interface/spec v1.12.0
	google.golang.org/grpc v1.69.2 // indirect
	google.golang.org/protobuf v1.36.0
)
