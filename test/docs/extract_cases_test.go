package docs_test

import (
	"reflect"
	"testing"
)

func TestMarkdownSources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		markdown string
		sources  []source
		queries  []query
	}{
		{
			name:     "a yaml block, from the line after its fence",
			markdown: "text\n\n```yaml\nkind: A\n```\n",
			sources:  []source{{file: "f.md", line: 4, text: "kind: A"}},
		},
		{
			name:     "a block inside a list item loses its indentation",
			markdown: "- item\n\n  ```yaml\n  spec:\n    x: 1\n  ```\n",
			sources:  []source{{file: "f.md", line: 4, text: "spec:\n  x: 1"}},
		},
		{
			name:     "a heredoc fed to kubectl in a shell block",
			markdown: "```sh\necho hi\nkubectl apply -f - <<EOF\nkind: A\nEOF\nkubectl get a\n```\n",
			sources:  []source{{file: "f.md", line: 4, text: "kind: A"}},
		},
		{
			name:     "the invalid marker on the last non-blank line before the fence",
			markdown: "<!-- docs-test: invalid -->\n\n```yaml\nkind: A\n```\n\n```yaml\nkind: B\n```\n",
			sources:  []source{{file: "f.md", line: 4, text: "kind: A", invalid: true}, {file: "f.md", line: 8, text: "kind: B"}},
		},
		{
			name:     "a promql block is one query",
			markdown: "```promql\nsum(x)\n  / sum(y)\n```\n",
			queries:  []query{{file: "f.md", line: 2, text: "sum(x)\n  / sum(y)"}},
		},
		{
			name:     "other blocks are neither",
			markdown: "```json\n{}\n```\n\n```\nkubectl apply -f - <<EOF\nkind: A\nEOF\n```\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sources, queries, err := markdownSources("f.md", tc.markdown)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sources, tc.sources) || !reflect.DeepEqual(queries, tc.queries) {
				t.Errorf("got sources %+v, queries %+v; want %+v, %+v", sources, queries, tc.sources, tc.queries)
			}
		})
	}
}

func TestDocuments(t *testing.T) {
	s := source{file: "f.md", line: 10, text: "# a comment\n---\nkind: A\nspec:\n  metrics:\n  - prometheus:\n      query: >-\n        sum(x)\n        + 1\n---\n"}
	docs, err := documents(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("got %d documents, want 1 (comments and empty documents are none)", len(docs))
	}
	if got, want := docs[0].line, 12; got != want {
		t.Errorf("document line %d, want %d", got, want)
	}
	if want := []query{{file: "f.md", line: 17, text: "sum(x) + 1"}}; !reflect.DeepEqual(docs[0].queries, want) {
		t.Errorf("queries %+v, want %+v", docs[0].queries, want)
	}
	if _, err := documents(source{file: "f.md", line: 3, text: "a: [b"}); err == nil {
		t.Error("a document that is not YAML was accepted")
	}
}
