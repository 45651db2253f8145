// Command credential-provider is a credential provider plugin for tests
// (credentialprovider.kubelet.k8s.io/v1): it hands out the credentials its
// arguments name and appends each request it gets to a log, so tests can
// count its runs and see the service account token it was given.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

func main() {
	user := flag.String("username", "", "username to hand out")
	pass := flag.String("password", "", "password to hand out")
	registry := flag.String("registry", "", "auth key (a registry glob); default the requested image's registry")
	keyType := flag.String("cache-key-type", "Image", "cacheKeyType of the response")
	ttl := flag.String("cache-duration", "", "cacheDuration of the response (empty: none, the kubelet's default applies)")
	logPath := flag.String("log", "", "file each request is appended to, one JSON line")
	fail := flag.Bool("fail", false, "fail every request (exit 1)")
	requireToken := flag.Bool("require-token", false, "fail requests without a service account token")
	failOn := flag.String("fail-on-annotation", "", "fail requests whose service account annotations have this key")
	flag.Parse()

	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		die("read stdin: %v", err)
	}
	var req credentialproviderv1.CredentialProviderRequest
	if err := json.Unmarshal(in, &req); err != nil {
		die("decode request: %v", err)
	}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			die("open log: %v", err)
		}
		line, _ := json.Marshal(req)
		fmt.Fprintf(f, "%s\n", line)
		f.Close()
	}
	if *fail {
		die("test plugin told to fail for %s", req.Image)
	}
	if _, ok := req.ServiceAccountAnnotations[*failOn]; ok && *failOn != "" {
		die("test plugin told to fail for accounts annotated %s", *failOn)
	}
	if *requireToken && req.ServiceAccountToken == "" {
		die("no service account token for %s", req.Image)
	}
	key := *registry
	if key == "" {
		key, _, _ = strings.Cut(req.Image, "/")
	}
	resp := credentialproviderv1.CredentialProviderResponse{
		TypeMeta:     metav1.TypeMeta{APIVersion: req.APIVersion, Kind: "CredentialProviderResponse"},
		CacheKeyType: credentialproviderv1.PluginCacheKeyType(*keyType),
		Auth:         map[string]credentialproviderv1.AuthConfig{key: {Username: *user, Password: *pass}},
	}
	if *ttl != "" {
		d, err := time.ParseDuration(*ttl)
		if err != nil {
			die("--cache-duration: %v", err)
		}
		resp.CacheDuration = &metav1.Duration{Duration: d}
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		die("encode response: %v", err)
	}
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
