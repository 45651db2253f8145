// Command csistandin holds the test stand-ins for the CSI parts the module
// proxy does not serve: a host-path CSI driver, a node-driver-registrar, and
// a provisioner (with an attacher) for its StorageClasses. They let the
// tests run the kubelet's CSI node side against real gRPC, real mounts and
// a real control plane.
//
//	csistandin driver      --endpoint SOCK --nodeid NODE --datadir DIR [--attach] ...
//	csistandin registrar   --csi-address SOCK --registration-dir DIR [--kubelet-registration-path SOCK]
//	csistandin provisioner --kubeconfig FILE --csi-address SOCK [--attach]
package main

import (
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	log.SetFlags(log.Lmicroseconds)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: csistandin driver|registrar|provisioner [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "driver":
		err = runDriver(os.Args[2:])
	case "registrar":
		err = runRegistrar(os.Args[2:])
	case "provisioner":
		err = runProvisioner(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

// stopOnSignal runs stop on SIGTERM or SIGINT, then exits.
func stopOnSignal(stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-ch
		log.Printf("%v: stopping", s)
		stop()
		os.Exit(0)
	}()
}
