// Command officialdesc writes the descriptor of the official CSI csi.proto
// (as compiled into the upstream Go bindings) to stdout as a binary
// google.protobuf.FileDescriptorProto. Used only by hearth's proto tests.
package main

import (
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

func main() {
	fd := protodesc.ToFileDescriptorProto(csi.File_csi_proto)
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(fd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "marshal:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		os.Exit(1)
	}
}
