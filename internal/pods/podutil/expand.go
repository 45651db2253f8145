package podutil

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Expand replaces each $(NAME) reference in s with mapping(NAME), as the
// Kubernetes API defines it for command, args, env values and subPathExpr:
// "$$" is a literal "$"; a "$" that starts neither form, or a "$(" with no
// closing ")", is kept as written; a "$" at the very end is kept. Nothing is
// expanded twice: a value that itself holds "$(X)" stays so.
func Expand(s string, mapping func(string) string) string {
	i := strings.IndexByte(s, '$')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		rest := s[i+1:]
		switch {
		case rest == "":
			b.WriteByte('$')
			s = rest
		case rest[0] == '$':
			b.WriteByte('$')
			s = rest[1:]
		case rest[0] == '(':
			if end := strings.IndexByte(rest, ')'); end >= 0 {
				b.WriteString(mapping(rest[1:end]))
				s = rest[end+1:]
			} else {
				// Unterminated: keep "$(" and go on scanning after it.
				b.WriteString("$(")
				s = rest[1:]
			}
		default:
			b.WriteByte('$')
			s = rest
		}
		i = strings.IndexByte(s, '$')
	}
	b.WriteString(s)
	return b.String()
}

// MappingFuncFor resolves a name in the first map that has it; a name none
// has stays as its reference, "$(NAME)".
func MappingFuncFor(maps ...map[string]string) func(string) string {
	return func(name string) string {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v
			}
		}
		return "$(" + name + ")"
	}
}

// ExpandCommandOnlyStatic expands an exec probe's or hook's command against
// the container's env as declared: each name maps to its literal value
// (empty for valueFrom entries, which are not resolved here). An empty
// command stays nil.
func ExpandCommandOnlyStatic(cmd []string, env []v1.EnvVar) []string {
	if len(cmd) == 0 {
		return nil
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	mapping := MappingFuncFor(vars)
	out := make([]string, len(cmd))
	for i, c := range cmd {
		out[i] = Expand(c, mapping)
	}
	return out
}
