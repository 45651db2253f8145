package sources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// This file lets a writer of manifests (the standalone node's local API)
// find and replace single documents the way the file source reads them.

// ManifestDocument is one non-empty document of a manifest file.
type ManifestDocument struct {
	// Raw is the document as written (comments included).
	Raw []byte
	// APIVersion and Kind name its type ("" when it has none).
	APIVersion, Kind string
	// Namespace ("default" when unset) and Name identify the object.
	Namespace, Name string
}

// SplitManifest splits a manifest into its documents, empty ones dropped.
// A document that is not a JSON or YAML object is kept with no kind.
func SplitManifest(data []byte) ([]ManifestDocument, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []ManifestDocument
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		js, meta, empty, err := documentJSON(raw)
		if empty {
			continue
		}
		d := ManifestDocument{Raw: bytes.Clone(raw)}
		if err == nil {
			var obj struct {
				Metadata struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			}
			_ = json.Unmarshal(js, &obj) // a bad document keeps no identity
			d.APIVersion, d.Kind, d.Name, d.Namespace = meta.APIVersion, meta.Kind, obj.Metadata.Name, obj.Metadata.Namespace
			if d.Namespace == "" {
				d.Namespace = metav1.NamespaceDefault
			}
		}
		docs = append(docs, d)
	}
}

// JoinManifest joins documents into one manifest, "---" between them.
func JoinManifest(docs [][]byte) []byte {
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(d)
		if len(d) > 0 && d[len(d)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// ManifestFiles lists the files at path the file source reads, in the
// order it reads them: path itself when it is a file, else the regular
// files in it whose names do not start with ".".
func ManifestFiles(path string) ([]string, error) {
	files, _, err := listManifestFiles(path)
	if err != nil {
		return nil, fmt.Errorf("list manifests at %s: %w", path, err)
	}
	return files, nil
}
