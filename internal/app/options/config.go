package options

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The only accepted type of a kubelet configuration file.
const (
	ConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"
	ConfigKind       = "KubeletConfiguration"
)

// ErrInvalidConfigFile classifies every error about the content of a
// configuration file (as opposed to failing to read it).
var ErrInvalidConfigFile = errors.New("invalid kubelet configuration file")

// LoadConfig reads a KubeletConfiguration from a YAML or JSON file. Decoding
// is strict: unknown or duplicate fields and values of the wrong type are
// errors naming the field. Relative paths in the file are resolved against
// the file's directory, as upstream does. Defaults are not applied.
func LoadConfig(path string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kubelet config file: %w", err)
	}
	cfg, _, err := decodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("kubelet config file %q: %w", path, err)
	}
	resolveRelativePaths(cfg, filepath.Dir(path))
	return cfg, nil
}

// decodeConfig strictly decodes one configuration document and also returns
// it as JSON for merging.
func decodeConfig(data []byte) (*kubeletconfigv1beta1.KubeletConfiguration, []byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, fmt.Errorf("%w: the file is empty", ErrInvalidConfigFile)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		if strings.Contains(err.Error(), "already") {
			return nil, nil, fmt.Errorf("%w: duplicate field: %v", ErrInvalidConfigFile, err)
		}
		return nil, nil, fmt.Errorf("%w: not valid YAML or JSON: %v", ErrInvalidConfigFile, err)
	}
	var typeMeta map[string]any
	if err := json.Unmarshal(js, &typeMeta); err != nil || typeMeta == nil {
		return nil, nil, fmt.Errorf("%w: the document must be a YAML or JSON object", ErrInvalidConfigFile)
	}
	if err := checkTypeMeta(typeMeta); err != nil {
		return nil, nil, err
	}
	cfg := &kubeletconfigv1beta1.KubeletConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrInvalidConfigFile, describeDecodeError(err, typeMeta))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, describeStrictError(e))
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrInvalidConfigFile, strings.Join(msgs, "; "))
	}
	return cfg, js, nil
}

func checkTypeMeta(doc map[string]any) error {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	var problems []string
	if apiVersion != ConfigAPIVersion {
		problems = append(problems, fmt.Sprintf("apiVersion is %q, must be %q", apiVersion, ConfigAPIVersion))
	}
	if kind != ConfigKind {
		problems = append(problems, fmt.Sprintf("kind is %q, must be %q", kind, ConfigKind))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfigFile, strings.Join(problems, "; "))
	}
	return nil
}

// describeStrictError renders an unknown/duplicate field error, suggesting
// the intended name for an unknown top-level field.
func describeStrictError(err error) string {
	msg := err.Error()
	var fe sigsjson.FieldError
	if errors.As(err, &fe) && strings.HasPrefix(msg, "unknown field") {
		path := fe.FieldPath()
		if !strings.Contains(path, ".") {
			if s := suggestField(path); s != "" {
				return fmt.Sprintf("%s (did you mean %q?)", msg, s)
			}
		}
	}
	return msg
}

// describeDecodeError names the field whose value could not be decoded and
// the type it must have.
func describeDecodeError(err error, doc map[string]any) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("field %s: expected %s, got %s", typeErr.Field, expectedType(typeErr.Field, typeErr.Type), typeErr.Value)
	}
	// Errors from custom decoders (durations, quantities) carry no path:
	// find the top-level field by decoding the fields one at a time.
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		one, mErr := json.Marshal(map[string]any{k: doc[k]})
		if mErr != nil {
			continue
		}
		if fErr := sigsjson.UnmarshalCaseSensitivePreserveInts(one, &kubeletconfigv1beta1.KubeletConfiguration{}); fErr != nil {
			if errors.As(fErr, &typeErr) && typeErr.Field != "" {
				return fmt.Sprintf("field %s: expected %s, got %s", typeErr.Field, expectedType(typeErr.Field, typeErr.Type), typeErr.Value)
			}
			return fmt.Sprintf("field %s: expected %s: %v", k, expectedType(k, nil), fErr)
		}
	}
	return err.Error()
}

var durationType = reflect.TypeOf(metav1.Duration{})

// expectedType describes the Go type of the field at a JSON path in words.
func expectedType(path string, fallback reflect.Type) string {
	t := fieldType(reflect.TypeOf(kubeletconfigv1beta1.KubeletConfiguration{}), strings.Split(path, "."))
	if t == nil {
		t = fallback
	}
	if t == nil {
		return "a valid value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return `a duration string such as "1m30s"`
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "an integer (" + t.Kind().String() + ")"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Map:
		return "an object (map)"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Struct:
		return "an object"
	}
	return t.String()
}

// fieldType walks JSON names through struct types (inlined structs included).
func fieldType(t reflect.Type, path []string) reflect.Type {
	for _, name := range path {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := jsonField(t, name)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" && strings.Contains(opts, "inline") || f.Anonymous && tag == "" {
			if inner, ok := jsonField(f.Type, name); ok {
				return inner, true
			}
			continue
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// configFieldNames lists the top-level JSON field names of KubeletConfiguration.
func configFieldNames() []string {
	t := reflect.TypeOf(kubeletconfigv1beta1.KubeletConfiguration{})
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && tag == "" {
				walk(f.Type)
				continue
			}
			if tag != "" && tag != "-" {
				names = append(names, tag)
			}
		}
	}
	walk(t)
	return names
}

// suggestField returns the known top-level field closest to name, if close.
func suggestField(name string) string {
	best, bestDist := "", 3
	for _, known := range configFieldNames() {
		if strings.EqualFold(known, name) {
			return known
		}
		if d := editDistance(strings.ToLower(known), strings.ToLower(name)); d < bestDist {
			best, bestDist = known, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// resolveRelativePaths makes the path-valued fields of a file absolute,
// relative to the file's directory.
func resolveRelativePaths(c *kubeletconfigv1beta1.KubeletConfiguration, dir string) {
	paths := []*string{&c.StaticPodPath, &c.Authentication.X509.ClientCAFile, &c.TLSCertFile,
		&c.TLSPrivateKeyFile, &c.VolumePluginDir, &c.PodLogsDir}
	if c.ResolverConfig != nil {
		paths = append(paths, c.ResolverConfig)
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// DropInSuffix is the file name suffix of --config-dir drop-ins.
const DropInSuffix = ".conf"

// MergeDropIns applies the *.conf files under dir (recursively, in lexical
// order) to base as JSON merge patches: objects merge key by key, any other
// value replaces. Each drop-in is strictly decoded first. base is not modified.
func MergeDropIns(base *kubeletconfigv1beta1.KubeletConfiguration, dir string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	merged, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("encode base configuration: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(merged, &doc); err != nil {
		return nil, fmt.Errorf("encode base configuration: %w", err)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), DropInSuffix) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read drop-in: %w", err)
		}
		_, js, err := decodeConfig(data)
		if err != nil {
			return fmt.Errorf("drop-in %q: %w", path, err)
		}
		var patch map[string]any
		if err := json.Unmarshal(js, &patch); err != nil {
			return fmt.Errorf("drop-in %q: %w", path, err)
		}
		doc = mergePatch(doc, patch).(map[string]any)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("merge drop-in configuration from %q: %w", dir, err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode merged configuration: %w", err)
	}
	result := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(out, result); err != nil {
		return nil, fmt.Errorf("decode merged configuration: %w", err)
	}
	return result, nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
