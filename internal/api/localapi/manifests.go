package localapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// manifestMode is the mode of the manifest files this API creates: they
// may hold Secrets, and the kubelet alone reads them.
const manifestMode = 0o600

// document is one document of a manifest file, found for an edit.
type document struct {
	path  string
	index int
	docs  []sources.ManifestDocument
	mode  fs.FileMode
	// inList says the object is an item of a PodList document, which this
	// API does not take apart.
	inList bool
}

// json returns the document as JSON.
func (d *document) json() ([]byte, error) {
	return utilyaml.ToJSON(d.docs[d.index].Raw)
}

// findDocument finds the document defining the v1 kind namespace/name
// among the manifest files at root (a directory or one file), in the order
// the file source reads them: the first definition is the one in use. It
// returns nil when there is none.
func findDocument(root, kind, namespace, name string) (*document, error) {
	files, err := sources.ManifestFiles(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		docs, err := sources.SplitManifest(data)
		if err != nil {
			continue // the file source skips it too
		}
		for i, d := range docs {
			if d.APIVersion != "v1" {
				continue
			}
			match := d.Kind == kind && d.Namespace == namespace && d.Name == name
			inList := !match && kind == "Pod" && d.Kind == "PodList" && podListHas(d.Raw, namespace, name)
			if match || inList {
				st, err := os.Stat(path)
				if err != nil {
					return nil, err
				}
				return &document{path: path, index: i, docs: docs, mode: st.Mode().Perm(), inList: inList}, nil
			}
		}
	}
	return nil, nil
}

func podListHas(raw []byte, namespace, name string) bool {
	js, err := utilyaml.ToJSON(raw)
	if err != nil {
		return false
	}
	var list v1.PodList
	if json.Unmarshal(js, &list) != nil {
		return false
	}
	for _, p := range list.Items {
		ns := p.Namespace
		if ns == "" {
			ns = "default"
		}
		if ns == namespace && p.Name == name {
			return true
		}
	}
	return false
}

// replace writes the file with the document replaced by data, or removed
// when data is nil; a file left with no document is removed.
func (d *document) replace(data []byte) error {
	var raws [][]byte
	for i, doc := range d.docs {
		switch {
		case i != d.index:
			raws = append(raws, doc.Raw)
		case data != nil:
			raws = append(raws, data)
		}
	}
	if len(raws) == 0 {
		if err := os.Remove(d.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return atomicfile.Write(d.path, sources.JoinManifest(raws), d.mode)
}

// newManifestPath names the file a new object goes to in dir:
// <kind>_<namespace>_<name>.yaml ("_" never occurs in either name), with a
// number added when a file of that name exists already.
func newManifestPath(dir, kind, namespace, name string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	base := strings.ToLower(kind) + "_" + namespace + "_" + name
	for i := 1; ; i++ {
		file := base + ".yaml"
		if i > 1 {
			file = fmt.Sprintf("%s_%d.yaml", base, i)
		}
		path := filepath.Join(dir, file)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return path, nil
		} else if err != nil {
			return "", err
		}
	}
}
