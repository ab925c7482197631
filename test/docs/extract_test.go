package docs_test

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Markers are HTML comments on the lines right before a fenced block (blank lines between are
// allowed), one per line:
//
//	<!-- docs-test: invalid -->          the block is shown because it is refused; the test asserts it is
//	<!-- docs-test: run -->              the block runs against the sandbox's stack (shell blocks, and
//	                                     YAML blocks a reader is told to apply), in the doc's order
//	<!-- docs-test: run <name>=web -->   as run, with each <placeholder> of the block replaced first
//	<!-- docs-test: skip <reason> -->    a shell block that cannot run against the sandbox, and why
//
// Every shell block carries run or skip, so a new one cannot go untested unnoticed.
const (
	markerPrefix  = "<!-- docs-test:"
	markerSuffix  = "-->"
	invalidMarker = markerPrefix + " invalid " + markerSuffix
)

// placeholderName matches the `<placeholder>=` that starts each pair of a run marker; a value
// runs up to the next pair or the end, so it may hold spaces (a command substitution).
var placeholderName = regexp.MustCompile(`(?:^|\s)<([\w-]+)>=`)

// markers is what the marker lines before a fenced block say.
type markers struct {
	invalid bool
	run     bool
	// placeholders of a run marker, "<name>" → its value, in the marker's order.
	placeholders [][2]string
	// skip is the reason a shell block does not run; empty when it is not skipped.
	skip string
}

// parseMarker reads one marker line into m.
func parseMarker(line string, m *markers) error {
	body := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, markerPrefix), markerSuffix))
	verb, rest, _ := strings.Cut(body, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "invalid":
		if rest != "" {
			return fmt.Errorf("%q: invalid takes nothing after it", line)
		}
		m.invalid = true
	case "run":
		pairs := placeholderName.FindAllStringSubmatchIndex(rest, -1)
		if rest != "" && (len(pairs) == 0 || pairs[0][0] != 0) {
			return fmt.Errorf("%q: run takes <placeholder>=value pairs, not %q", line, rest)
		}
		for i, pair := range pairs {
			end := len(rest)
			if i+1 < len(pairs) {
				end = pairs[i+1][0]
			}
			m.placeholders = append(m.placeholders, [2]string{"<" + rest[pair[2]:pair[3]] + ">", strings.TrimSpace(rest[pair[1]:end])})
		}
		m.run = true
	case "skip":
		if rest == "" {
			return fmt.Errorf("%q: skip needs a reason", line)
		}
		m.skip = rest
	default:
		return fmt.Errorf("%q: unknown marker %q (invalid, run or skip)", line, verb)
	}
	if m.run && m.skip != "" {
		return fmt.Errorf("%q: a block cannot both run and be skipped", line)
	}
	return nil
}

// source is YAML a reader is meant to apply or copy: a ```yaml block, a heredoc fed to
// kubectl in a shell block, or a file of docs/examples.
type source struct {
	file string
	// line is the 1-based line of the source's first line in file.
	line    int
	text    string
	invalid bool
}

// document is one YAML document of a source.
type document struct {
	source  source
	line    int
	object  *unstructured.Unstructured
	queries []query
}

// query is a PromQL query found in a ```promql block or a manifest's prometheus.query field.
type query struct {
	file string
	line int
	text string
}

var (
	// heredocStart matches `kubectl apply -f - <<EOF` (or create, quoted or dashed tags).
	heredocStart = regexp.MustCompile(`\bkubectl\s+(?:apply|create)\b.*<<-?\s*['"]?(\w+)['"]?`)
	// manifestAPIVersion is a Karpenter object's apiVersion at the start of a line, where a
	// manifest's top-level key is; nested scaleTargetRef.apiVersion keys are indented.
	manifestAPIVersion = regexp.MustCompile(`^apiVersion:\s*['"]?[a-z0-9.]*karpenter\.sh/`)
)

// fencedBlock is a ``` block of a Markdown file.
type fencedBlock struct {
	lang string
	// line is the 1-based line of the block's first content line.
	line int
	text string
	markers
}

// isShell says whether a fenced block's language is a shell's.
func isShell(lang string) bool {
	switch lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// fencedBlocks returns the fenced code blocks of a Markdown file, their indentation (a block
// inside a list item) removed.
func fencedBlocks(markdown string) ([]fencedBlock, error) {
	lines := strings.Split(markdown, "\n")
	var blocks []fencedBlock
	for i := 0; i < len(lines); i++ {
		opening := strings.TrimLeft(lines[i], " \t")
		if !strings.HasPrefix(opening, "```") {
			continue
		}
		indent := len(lines[i]) - len(opening)
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "```") {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("line %d: a fenced block is never closed", i+1)
		}
		body := make([]string, 0, end-i-1)
		for _, line := range lines[i+1 : end] {
			body = append(body, trimIndent(line, indent))
		}
		block := fencedBlock{lang: strings.TrimSpace(strings.TrimPrefix(opening, "```")), line: i + 2, text: strings.Join(body, "\n")}
		for previous := i - 1; previous >= 0; previous-- {
			line := strings.TrimSpace(lines[previous])
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, markerPrefix) || !strings.HasSuffix(line, markerSuffix) {
				break
			}
			if err := parseMarker(line, &block.markers); err != nil {
				return nil, fmt.Errorf("line %d: %w", previous+1, err)
			}
		}
		blocks = append(blocks, block)
		i = end
	}
	return blocks, nil
}

// trimIndent removes up to n leading spaces or tabs.
func trimIndent(line string, n int) string {
	for n > 0 && line != "" && (line[0] == ' ' || line[0] == '\t') {
		line, n = line[1:], n-1
	}
	return line
}

// markdownSources returns the YAML of a Markdown file's ```yaml blocks and of the heredocs
// its shell blocks feed to kubectl, and the queries of its ```promql blocks.
func markdownSources(file, markdown string) ([]source, []query, error) {
	blocks, err := fencedBlocks(markdown)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	var sources []source
	var queries []query
	for _, b := range blocks {
		switch b.lang {
		case "yaml", "yml":
			sources = append(sources, source{file: file, line: b.line, text: b.text, invalid: b.invalid})
		case "promql":
			queries = append(queries, query{file: file, line: b.line, text: b.text})
		default:
			if !isShell(b.lang) {
				continue
			}
			lines := strings.Split(b.text, "\n")
			for i := 0; i < len(lines); i++ {
				m := heredocStart.FindStringSubmatch(lines[i])
				if m == nil {
					continue
				}
				end := i + 1
				for end < len(lines) && strings.TrimSpace(lines[end]) != m[1] {
					end++
				}
				if end == len(lines) {
					return nil, nil, fmt.Errorf("%s:%d: the heredoc %s is never closed", file, b.line+i, m[1])
				}
				sources = append(sources, source{file: file, line: b.line + i + 1, text: strings.Join(lines[i+1:end], "\n"), invalid: b.invalid})
				i = end
			}
		}
	}
	return sources, queries, nil
}

// documents splits a source into its YAML documents and finds their queries. A document that
// does not parse is an error: a reader copying it would get one too.
func documents(s source) ([]document, error) {
	var docs []document
	lines := strings.Split(s.text, "\n")
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) && strings.TrimSpace(lines[i]) != "---" {
			continue
		}
		text := strings.Join(lines[start:i], "\n")
		line := s.line + start
		object := map[string]any{}
		if err := utilyaml.Unmarshal([]byte(text), &object); err != nil {
			return nil, fmt.Errorf("%s:%d: not YAML, %w", s.file, line, err)
		}
		if len(object) > 0 {
			doc := document{source: s, line: line, object: &unstructured.Unstructured{Object: object}}
			for _, q := range prometheusQueries(object) {
				doc.queries = append(doc.queries, query{file: s.file, line: line + lineOf(lines[start:i], q), text: q})
			}
			docs = append(docs, doc)
		}
		start = i + 1
	}
	return docs, nil
}

// prometheusQueries returns every prometheus.query string in a decoded YAML value, wherever it
// is nested (a whole HorizontalAutoscaler or a `metrics:` fragment).
func prometheusQueries(value any) []string {
	var queries []string
	switch v := value.(type) {
	case map[string]any:
		if prometheus, ok := v["prometheus"].(map[string]any); ok {
			if q, ok := prometheus["query"].(string); ok {
				queries = append(queries, q)
			}
		}
		for _, child := range v {
			queries = append(queries, prometheusQueries(child)...)
		}
	case []any:
		for _, child := range v {
			queries = append(queries, prometheusQueries(child)...)
		}
	}
	return queries
}

// lineOf is the 0-based line of lines where query starts: the first holding its first word
// (a folded `>-` query spans lines), or 0 when none does.
func lineOf(lines []string, query string) int {
	words := strings.Fields(query)
	if len(words) == 0 {
		return 0
	}
	for i, line := range lines {
		if strings.Contains(line, words[0]) {
			return i
		}
	}
	return 0
}

// isKarpenterManifest says whether a document is an object of one of Karpenter's API groups,
// rather than a fragment (`spec:`, `metrics:`) or another project's object.
func isKarpenterManifest(object *unstructured.Unstructured) bool {
	group := object.GroupVersionKind().Group
	return object.GetKind() != "" && (group == "karpenter.sh" || strings.HasSuffix(group, ".karpenter.sh"))
}
