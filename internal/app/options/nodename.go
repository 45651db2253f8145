package options

import (
	"fmt"
	"os"
	"strings"
)

// NodeName returns the node name: --hostname-override if set, otherwise the
// machine's hostname, trimmed and lowercased as upstream does.
func NodeName(hostnameOverride string) (string, error) {
	return nodeName(hostnameOverride, os.Hostname)
}

func nodeName(override string, hostname func() (string, error)) (string, error) {
	name := override
	if name == "" {
		h, err := hostname()
		if err != nil {
			return "", fmt.Errorf("determine hostname: %w", err)
		}
		name = h
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("empty hostname is invalid")
	}
	return strings.ToLower(name), nil
}
