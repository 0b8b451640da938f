package assembly

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Frontmatter is the metadata block of a SKILL.md or agent profile.
type Frontmatter struct {
	Name        string
	Description string
	Model       string   // agent profiles only; optional
	Tools       []string // agent profiles only: the tools a sub-agent gets; optional
}

// ErrNoFrontmatter is returned when a file does not start with a "---" line.
var ErrNoFrontmatter = errors.New("no frontmatter: the file must start with a \"---\" line")

// ParseFrontmatter splits data into its frontmatter and body. The file must
// start with a line "---"; the YAML up to the next "---" line is a mapping
// whose "name" and "description" are required non-empty strings and whose
// "model", if present, is a string. Other keys are ignored. A line's trailing
// "\r" is ignored, so CRLF files work. The body is everything after the
// closing line.
//
// Whitespace runs in the description become single spaces, because a catalog
// gives each entry one line; the name must be one line already.
func ParseFrontmatter(data []byte) (Frontmatter, []byte, error) {
	return parseFrontmatter(data, "")
}

// ParseProfile is ParseFrontmatter for an agent profile: its name may be
// left out, and is then the file's (file, without ".md"); "tools", if
// present, is a list of tool names (or one string of them, separated by
// commas or spaces).
func ParseProfile(data []byte, file string) (Frontmatter, []byte, error) {
	return parseFrontmatter(data, strings.TrimSuffix(file, ".md"))
}

func parseFrontmatter(data []byte, defaultName string) (Frontmatter, []byte, error) {
	first, rest, _ := cutLine(data)
	if string(first) != "---" {
		return Frontmatter{}, nil, ErrNoFrontmatter
	}
	var yamlText []byte
	body := rest
	closed := false
	for len(body) > 0 {
		line, next, _ := cutLine(body)
		if string(line) == "---" {
			yamlText = rest[:len(rest)-len(body)]
			body, closed = next, true
			break
		}
		body = next
	}
	if !closed {
		return Frontmatter{}, nil, errors.New("frontmatter has no closing \"---\" line")
	}

	var fields map[string]any
	if err := yaml.Unmarshal(yamlText, &fields); err != nil {
		return Frontmatter{}, nil, fmt.Errorf("frontmatter: %w", err)
	}
	var fm Frontmatter
	var err error
	if fm.Name, err = stringField(fields, "name", defaultName == ""); err != nil {
		return Frontmatter{}, nil, err
	}
	if fm.Name == "" {
		fm.Name = defaultName
	}
	if fm.Description, err = stringField(fields, "description", true); err != nil {
		return Frontmatter{}, nil, err
	}
	if fm.Model, err = stringField(fields, "model", false); err != nil {
		return Frontmatter{}, nil, err
	}
	if defaultName != "" {
		if fm.Tools, err = listField(fields, "tools"); err != nil {
			return Frontmatter{}, nil, err
		}
	}
	fm.Name = strings.TrimSpace(fm.Name)
	if strings.ContainsFunc(fm.Name, unicode.IsControl) {
		return Frontmatter{}, nil, errors.New("frontmatter: name must be a single line")
	}
	fm.Description = strings.Join(strings.Fields(fm.Description), " ")
	fm.Model = strings.TrimSpace(fm.Model)
	if fm.Name == "" || fm.Description == "" {
		return Frontmatter{}, nil, errors.New("frontmatter: name and description must not be empty")
	}
	return fm, body, nil
}

// cutLine splits off data's first line without its "\n" or "\r\n"; ok reports
// whether a line break was found.
func cutLine(data []byte) (line, rest []byte, ok bool) {
	line, rest, ok = bytes.Cut(data, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, ok
}

// listField reads an optional list of strings, or one string of them
// separated by commas or spaces.
func listField(fields map[string]any, key string) ([]string, error) {
	switch v := fields[key].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, it := range v {
			s, ok := it.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return nil, fmt.Errorf("frontmatter: %q must list names", key)
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out, nil
	}
	return nil, fmt.Errorf("frontmatter: %q must be a list of names", key)
}

func stringField(fields map[string]any, key string, required bool) (string, error) {
	v, ok := fields[key]
	if !ok {
		if required {
			return "", fmt.Errorf("frontmatter: missing %q", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("frontmatter: %q must be a string", key)
	}
	return s, nil
}
