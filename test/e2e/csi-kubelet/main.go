// csi-kubelet makes the node calls that the kubelet makes to a CSI driver, for hearth's e2e test,
// where no kubelet runs: one RPC per invocation on the driver's socket, the response printed as
// JSON (protojson, field names as in the proto) on stdout, a failure as "CODE: message" on stderr
// with exit status 1.
//
//	csi-kubelet -endpoint unix:///path/csi.sock stage   -volume ID -staging DIR [-fs-type T] [-block] [-context JSON]
//	csi-kubelet -endpoint ... publish -volume ID -staging DIR -target PATH [-fs-type T] [-block] [-readonly] [-context JSON]
//	csi-kubelet -endpoint ... expand  -volume ID -path PATH [-staging DIR] -bytes N [-fs-type T] [-block]
//	csi-kubelet -endpoint ... stats   -volume ID -path PATH [-staging DIR]
//	csi-kubelet -endpoint ... unpublish -volume ID -target PATH
//	csi-kubelet -endpoint ... unstage -volume ID -staging DIR
//
// The requests carry what the kubelet puts in them for a PersistentVolume of hearth's: the PV's
// spec.csi.volumeAttributes as volume_context (-context, a JSON object of strings), its fsType,
// and the access mode of a ReadWriteOnce claim (SINGLE_NODE_WRITER). Like the kubelet, publish
// makes neither the target nor its parent; the driver does.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type options struct {
	volume, staging, target, path, fsType, contextJSON string
	block, readonly                                    bool
	bytes                                              int64
}

func run(args []string) error {
	global := flag.NewFlagSet("csi-kubelet", flag.ContinueOnError)
	endpoint := global.String("endpoint", "", "the driver's socket: unix:///path/csi.sock")
	timeout := global.Duration("timeout", 2*time.Minute, "deadline of the call")
	if err := global.Parse(args); err != nil {
		return err
	}
	if *endpoint == "" || global.NArg() == 0 {
		return fmt.Errorf("usage: csi-kubelet -endpoint unix:///path/csi.sock stage|publish|expand|stats|unpublish|unstage [flags]")
	}
	verb := global.Arg(0)
	var o options
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.StringVar(&o.volume, "volume", "", "volume ID (the PV's spec.csi.volumeHandle)")
	fs.StringVar(&o.staging, "staging", "", "staging target path")
	fs.StringVar(&o.target, "target", "", "publish target path")
	fs.StringVar(&o.path, "path", "", "volume path (expand, stats)")
	fs.StringVar(&o.fsType, "fs-type", "", "filesystem type (the PV's spec.csi.fsType)")
	fs.StringVar(&o.contextJSON, "context", "", "volume context: the PV's spec.csi.volumeAttributes as a JSON object")
	fs.BoolVar(&o.block, "block", false, "a raw block volume (volumeMode: Block)")
	fs.BoolVar(&o.readonly, "readonly", false, "publish read-only")
	fs.Int64Var(&o.bytes, "bytes", 0, "expand: the new size in bytes (required_bytes)")
	if err := fs.Parse(global.Args()[1:]); err != nil {
		return err
	}
	if o.volume == "" {
		return fmt.Errorf("%s: -volume is required", verb)
	}
	volumeContext := map[string]string{}
	if o.contextJSON != "" {
		if err := json.Unmarshal([]byte(o.contextJSON), &volumeContext); err != nil {
			return fmt.Errorf("-context: %v", err)
		}
	}

	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	node := csi.NewNodeClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var resp proto.Message
	switch verb {
	case "stage":
		resp, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
			VolumeId: o.volume, StagingTargetPath: need(o.staging, "-staging"),
			VolumeCapability: capability(o), VolumeContext: volumeContext,
		})
	case "publish":
		resp, err = node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
			VolumeId: o.volume, StagingTargetPath: need(o.staging, "-staging"), TargetPath: need(o.target, "-target"),
			VolumeCapability: capability(o), Readonly: o.readonly, VolumeContext: volumeContext,
		})
	case "expand":
		if o.bytes <= 0 {
			return fmt.Errorf("expand: -bytes is required")
		}
		resp, err = node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
			VolumeId: o.volume, VolumePath: need(o.path, "-path"), StagingTargetPath: o.staging,
			CapacityRange: &csi.CapacityRange{RequiredBytes: o.bytes}, VolumeCapability: capability(o),
		})
	case "stats":
		resp, err = node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{
			VolumeId: o.volume, VolumePath: need(o.path, "-path"), StagingTargetPath: o.staging,
		})
	case "unpublish":
		resp, err = node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{
			VolumeId: o.volume, TargetPath: need(o.target, "-target"),
		})
	case "unstage":
		resp, err = node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{
			VolumeId: o.volume, StagingTargetPath: need(o.staging, "-staging"),
		})
	default:
		return fmt.Errorf("unknown call %q: stage, publish, expand, stats, unpublish or unstage", verb)
	}
	if err != nil {
		if s, ok := status.FromError(err); ok {
			return fmt.Errorf("%s: %s: %s", verb, s.Code(), s.Message())
		}
		return err
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: false}.Marshal(resp)
	if err != nil {
		return err
	}
	fmt.Println(strings.TrimSpace(string(out)))
	return nil
}

// need exits with a usage error when a required path flag is empty.
func need(value, name string) string {
	if value == "" {
		fmt.Fprintf(os.Stderr, "%s is required\n", name)
		os.Exit(2)
	}
	return value
}

// capability is what the kubelet sends for a ReadWriteOnce PV of the given mode and fsType.
func capability(o options) *csi.VolumeCapability {
	c := &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	if o.block {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: o.fsType}}
	}
	return c
}
