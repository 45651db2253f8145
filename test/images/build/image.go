package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Media types and annotations of the OCI image spec and containerd.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"

	annotationRefName        = "org.opencontainers.image.ref.name"
	annotationContainerdName = "io.containerd.image.name"
)

// Spec describes the image to write besides its root filesystem.
type Spec struct {
	Names      []string // image references; short names are normalized (busybox -> docker.io/library/busybox:latest)
	Entrypoint []string
	Cmd        []string
	Env        []string // KEY=VALUE; a default PATH is added when none is given
	WorkingDir string
	User       string
	Created    time.Time // image and file timestamps; fixed so output is reproducible
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type imageConfig struct {
	Created      string         `json:"created"`
	Architecture string         `json:"architecture"`
	OS           string         `json:"os"`
	Config       runtimeConfig  `json:"config"`
	RootFS       rootFS         `json:"rootfs"`
	History      []historyEntry `json:"history"`
}

type runtimeConfig struct {
	User       string   `json:"User,omitempty"`
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type historyEntry struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// dockerManifest is one entry of a docker-archive manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

type blob struct {
	digest string // sha256:<hex>
	data   []byte
}

func newBlob(data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{digest: "sha256:" + hex.EncodeToString(sum[:]), data: data}
}

func (b blob) path() string { return "blobs/sha256/" + strings.TrimPrefix(b.digest, "sha256:") }

func (b blob) descriptor(mediaType string) descriptor {
	return descriptor{MediaType: mediaType, Digest: b.digest, Size: int64(len(b.data))}
}

// Write builds a one-layer image of rootfs and writes it to out as a tar
// holding both an OCI image layout and a docker-archive manifest.json.
// It returns the manifest digest.
func Write(out io.Writer, rootfs string, spec Spec) (string, error) {
	if len(spec.Names) == 0 {
		return "", fmt.Errorf("at least one image name is required")
	}
	names := make([]string, 0, len(spec.Names))
	for _, n := range spec.Names {
		norm, err := normalizeName(n)
		if err != nil {
			return "", err
		}
		names = append(names, norm)
	}

	var layerBuf bytes.Buffer
	if err := writeLayer(&layerBuf, rootfs, spec.Created); err != nil {
		return "", fmt.Errorf("layer from %s: %w", rootfs, err)
	}
	layer := newBlob(layerBuf.Bytes())

	env := spec.Env
	if !hasPath(env) {
		env = append([]string{defaultPath}, env...)
	}
	created := spec.Created.UTC().Format(time.RFC3339)
	cfgJSON, err := json.Marshal(imageConfig{
		Created:      created,
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Config: runtimeConfig{
			User: spec.User, Env: env, Entrypoint: spec.Entrypoint,
			Cmd: spec.Cmd, WorkingDir: spec.WorkingDir,
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{layer.digest}},
		History: []historyEntry{{Created: created, CreatedBy: "seed-kubelet test/images/build"}},
	})
	if err != nil {
		return "", err
	}
	cfg := newBlob(cfgJSON)

	mfJSON, err := json.Marshal(manifest{
		SchemaVersion: 2,
		MediaType:     mediaTypeManifest,
		Config:        cfg.descriptor(mediaTypeConfig),
		Layers:        []descriptor{layer.descriptor(mediaTypeLayer)},
	})
	if err != nil {
		return "", err
	}
	mf := newBlob(mfJSON)

	idx := index{SchemaVersion: 2, MediaType: mediaTypeIndex}
	for _, n := range names {
		d := mf.descriptor(mediaTypeManifest)
		d.Platform = &platform{Architecture: runtime.GOARCH, OS: "linux"}
		d.Annotations = map[string]string{annotationContainerdName: n, annotationRefName: tagOf(n)}
		idx.Manifests = append(idx.Manifests, d)
	}
	idxJSON, err := json.Marshal(idx)
	if err != nil {
		return "", err
	}
	dockerJSON, err := json.Marshal([]dockerManifest{{
		Config: cfg.path(), RepoTags: names, Layers: []string{layer.path()},
	}})
	if err != nil {
		return "", err
	}

	tw := tar.NewWriter(out)
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idxJSON},
		{"manifest.json", dockerJSON},
		{layer.path(), layer.data},
		{cfg.path(), cfg.data},
		{mf.path(), mf.data},
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: spec.Created}); err != nil {
			return "", err
		}
	}
	for _, f := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: spec.Created}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return mf.digest, nil
}

// writeLayer tars rootfs in lexical order with owner root and a fixed mtime,
// keeping permission bits (setuid/sticky included) and symlink targets.
func writeLayer(w io.Writer, rootfs string, mtime time.Time) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootfs, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeDir, tar.TypeSymlink:
		default:
			return fmt.Errorf("%s: unsupported file type %v", rel, info.Mode().Type())
		}
		hdr.Name = filepath.ToSlash(rel)
		if hdr.Typeflag == tar.TypeDir {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = mtime, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func hasPath(env []string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return true
		}
	}
	return false
}

// normalizeName turns a docker-style short reference into the fully
// qualified form containerd and the CRI use: busybox ->
// docker.io/library/busybox:latest, localhost:5000/x -> localhost:5000/x:latest.
func normalizeName(ref string) (string, error) {
	if ref == "" || strings.ContainsAny(ref, " \t\n@") || strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") {
		return "", fmt.Errorf("invalid image name %q (digests are not accepted)", ref)
	}
	first, rest, hasSlash := strings.Cut(ref, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		// No registry host given: Docker Hub, official images under library/.
		if !hasSlash {
			ref = "library/" + ref
		}
		ref = "docker.io/" + ref
	} else if rest == "" {
		return "", fmt.Errorf("invalid image name %q", ref)
	}
	if !strings.Contains(path.Base(ref), ":") {
		ref += ":latest"
	}
	return ref, nil
}

// tagOf returns the tag of a normalized reference (the part after the last
// colon of the last path component).
func tagOf(ref string) string {
	base := path.Base(ref)
	if i := strings.LastIndex(base, ":"); i >= 0 {
		return base[i+1:]
	}
	return "latest"
}
