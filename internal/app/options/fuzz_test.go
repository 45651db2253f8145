package options

import (
	"errors"
	"testing"
)

// FuzzDecodeConfig feeds configuration files (seeds: examples/ and the
// shapes the tests use, testdata/fuzz) through strict decoding, defaulting,
// validation and the unsupported-field check: never a panic, and every
// refusal is an ErrInvalidConfigFile.
func FuzzDecodeConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, js, err := decodeConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfigFile) {
				t.Fatalf("refused with an error of another class: %v", err)
			}
			return
		}
		if len(js) == 0 {
			t.Fatal("decoded without its JSON")
		}
		resolveRelativePaths(cfg, "/etc/kubernetes")
		SetDefaults(cfg)
		_ = validateConfig(cfg)
		_ = UnsupportedConfigFields(cfg)
	})
}
