// probe waits for a CSI driver to answer Probe on its socket, for test/image/run: it polls every
// 10 ms from its start (the socket need not exist yet) until Probe succeeds with ready unset or
// true, then prints the wall-clock time of that answer in Unix nanoseconds, so that the caller can
// time a container's start from its own clock. Exit status 1, with the last error, at the timeout.
//
//	probe -endpoint unix:///path/csi.sock [-timeout 60s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	endpoint := flag.String("endpoint", "", "the driver's socket: unix:///path/csi.sock")
	timeout := flag.Duration("timeout", time.Minute, "how long to wait for a ready answer")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "usage: probe -endpoint unix:///path/csi.sock [-timeout 60s]")
		os.Exit(2)
	}
	deadline := time.Now().Add(*timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		ready, err := probe(*endpoint)
		switch {
		case err != nil:
			last = err.Error()
		case !ready:
			last = "ready: false"
		default:
			fmt.Println(time.Now().UnixNano())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "no ready Probe answer on %s within %s: %s\n", *endpoint, *timeout, last)
	os.Exit(1)
}

// probe makes one Probe call on a connection of its own: a channel that found no socket would wait
// out gRPC's reconnect backoff (a second at first) before trying again.
func probe(endpoint string) (bool, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
	if err != nil {
		return false, err
	}
	return resp.GetReady() == nil || resp.GetReady().GetValue(), nil
}
