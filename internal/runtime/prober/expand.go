package prober

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expandCommand substitutes $(NAME) references in an exec probe command with
// the container's statically defined env values. "$$" escapes a dollar sign;
// unknown references are left untouched.
func expandCommand(cmd []string, c *v1.Container) []string {
	if c == nil || len(c.Env) == 0 {
		return cmd
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expandOne(arg, env)
	}
	return out
}

func expandOne(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
