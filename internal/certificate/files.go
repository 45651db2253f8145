package certificate

import (
	"errors"
	"io/fs"
	"os"
)

// fileExists reports whether path exists (following links); other stat
// errors are returned.
func fileExists(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
