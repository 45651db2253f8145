package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrar answers the kubelet's plugin watcher as node-driver-registrar
// does: GetInfo names the driver and its endpoint, and a failed
// registration status ends the process (to be restarted).
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	registered     chan struct{}
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		log.Printf("Registration process failed with error: %s, restarting registration container.", s.Error)
		os.Exit(1)
	}
	log.Printf("Received NotifyRegistrationStatus call: %+v", s)
	select {
	case r.registered <- struct{}{}:
	default:
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func runRegistrar(args []string) error {
	fl := flag.NewFlagSet("registrar", flag.ExitOnError)
	csiAddress := fl.String("csi-address", "", "the driver's socket")
	regPath := fl.String("kubelet-registration-path", "", "the driver's socket as the kubelet sees it (default --csi-address)")
	regDir := fl.String("registration-dir", "", "the kubelet's plugins_registry directory")
	fl.Parse(args)
	if *csiAddress == "" || *regDir == "" {
		return errors.New("--csi-address and --registration-dir are required")
	}
	if *regPath == "" {
		*regPath = *csiAddress
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	conn, err := connection.Connect(ctx, *csiAddress, nil)
	if err != nil {
		cancel()
		return err
	}
	name, err := rpc.GetDriverName(ctx, conn)
	cancel()
	conn.Close()
	if err != nil {
		return err
	}
	socket := filepath.Join(*regDir, name+"-reg.sock")
	os.Remove(socket)
	if err := os.MkdirAll(*regDir, 0o750); err != nil {
		return err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registrar{name: name, endpoint: *regPath, registered: make(chan struct{}, 1)})
	log.Printf("registration server for %s (endpoint %s) on %s", name, *regPath, socket)
	stopOnSignal(func() { srv.Stop(); os.Remove(socket) })
	return srv.Serve(l)
}
