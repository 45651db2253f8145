package framework

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// UnitCommand returns the command line a systemd unit drop-in starts, as
// systemd builds it: Environment= assignments and EnvironmentFile= files
// (a leading '-' makes a missing file fine) set variables in order, the
// last ExecStart= is the command, and each $VAR in it expands to the
// variable's whitespace-separated words. files maps a path named in the
// drop-in to where that file really is (a test's temporary directory);
// paths not in it are read as they are.
func UnitCommand(dropIn string, files map[string]string) ([]string, error) {
	data, err := os.ReadFile(dropIn)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	var exec string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch key {
		case "Environment":
			if err := assign(env, value); err != nil {
				return nil, fmt.Errorf("%s: %w", dropIn, err)
			}
		case "EnvironmentFile":
			optional := strings.HasPrefix(value, "-")
			path := strings.TrimPrefix(value, "-")
			if p, ok := files[path]; ok {
				path = p
			}
			content, err := os.ReadFile(path)
			if err != nil {
				if optional && os.IsNotExist(err) {
					continue
				}
				return nil, err
			}
			for _, l := range strings.Split(string(content), "\n") {
				if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				if err := assign(env, l); err != nil {
					return nil, fmt.Errorf("%s: %w", path, err)
				}
			}
		case "ExecStart":
			exec = value // an empty ExecStart= resets; the last one wins
		}
	}
	if exec == "" {
		return nil, fmt.Errorf("%s: no ExecStart", dropIn)
	}
	var argv []string
	for _, word := range strings.Fields(exec) {
		if name, ok := strings.CutPrefix(word, "$"); ok {
			argv = append(argv, strings.Fields(env[name])...)
			continue
		}
		argv = append(argv, word)
	}
	return argv[1:], nil
}

// assign applies one "NAME=value" (the whole assignment may be quoted, as
// in Environment="A=b c", or only the value, as in A="b c").
func assign(env map[string]string, s string) error {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return fmt.Errorf("bad assignment %s: %w", s, err)
		}
		s = u
	}
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("bad assignment %q", s)
	}
	if strings.HasPrefix(value, `"`) {
		u, err := strconv.Unquote(value)
		if err != nil {
			return fmt.Errorf("bad value %s: %w", value, err)
		}
		value = u
	}
	env[name] = value
	return nil
}
