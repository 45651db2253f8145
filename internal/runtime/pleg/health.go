package pleg

import (
	"fmt"
	"time"
)

func errNotHealthy(since, threshold time.Duration) error {
	return fmt.Errorf("pleg was last seen active %v ago; threshold is %v", since.Round(time.Millisecond), threshold)
}

// HealthCheck is Healthy's error alone, for /healthz and the node's Ready
// condition.
func (p *PLEG) HealthCheck() error {
	_, err := p.Healthy()
	return err
}
