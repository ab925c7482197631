package docs_test

import (
	"reflect"
	"strings"
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

func TestMarkers(t *testing.T) {
	for _, tc := range []struct {
		name, markdown string
		want           markers
		err            string
	}{
		{name: "none", markdown: "```sh\nls\n```\n"},
		{name: "run", markdown: "<!-- docs-test: run -->\n```sh\nls\n```\n", want: markers{run: true}},
		{
			name:     "run with placeholders, a value holding spaces",
			markdown: "<!-- docs-test: run <name>=web <node>=$(kubectl get nodes -o name | head -n1) -->\n```sh\nls\n```\n",
			want:     markers{run: true, placeholders: [][2]string{{"<name>", "web"}, {"<node>", "$(kubectl get nodes -o name | head -n1)"}}},
		},
		{
			name:     "several marker lines, blank lines between",
			markdown: "<!-- docs-test: invalid -->\n\n<!-- docs-test: run -->\n\n```sh\nls\n```\n",
			want:     markers{invalid: true, run: true},
		},
		{name: "skip with its reason", markdown: "<!-- docs-test: skip needs an AWS account -->\n```sh\nls\n```\n", want: markers{skip: "needs an AWS account"}},
		{name: "a marker above other text is not the block's", markdown: "<!-- docs-test: run -->\ntext\n```sh\nls\n```\n"},
		{name: "skip without a reason", markdown: "<!-- docs-test: skip -->\n```sh\nls\n```\n", err: "skip needs a reason"},
		{name: "an unknown marker", markdown: "<!-- docs-test: runs -->\n```sh\nls\n```\n", err: `unknown marker "runs"`},
		{name: "run with words that are no placeholders", markdown: "<!-- docs-test: run fast -->\n```sh\nls\n```\n", err: "run takes <placeholder>=value pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := fencedBlocks(tc.markdown)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != 1 || !reflect.DeepEqual(blocks[0].markers, tc.want) {
				t.Errorf("got %+v, want markers %+v", blocks, tc.want)
			}
		})
	}
}

func TestBlockCommands(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block fencedBlock
		want  []command
	}{
		{
			name:  "one command a line; comments and blank lines are not commands",
			block: fencedBlock{lang: "sh", line: 10, text: "# first\nkubectl get ha   # trailing\n\nkubectl get sng"},
			want:  []command{{file: "f.md", line: 11, text: "kubectl get ha   # trailing"}, {file: "f.md", line: 13, text: "kubectl get sng"}},
		},
		{
			name:  "continuations and a trailing pipe join lines",
			block: fencedBlock{lang: "sh", line: 1, text: "kubectl get \\\n  ha |\n  grep x\nls"},
			want:  []command{{file: "f.md", line: 1, text: "kubectl get \\\n  ha |\n  grep x"}, {file: "f.md", line: 4, text: "ls"}},
		},
		{
			name:  "a heredoc is part of its command; comments right under it are its shown output",
			block: fencedBlock{lang: "sh", line: 1, text: "kubectl apply -f - <<EOF   # refused\nkind: A\n# not a comment here\nEOF\n# Error from server: no\n#   ... at all\n\n# a comment after a blank line"},
			want: []command{{file: "f.md", line: 1, text: "kubectl apply -f - <<EOF   # refused\nkind: A\n# not a comment here\nEOF",
				shown: []string{"Error from server: no", "... at all"}}},
		},
		{
			name:  "placeholders are replaced",
			block: fencedBlock{lang: "sh", line: 1, text: "kubectl describe ha <name>", markers: markers{run: true, placeholders: [][2]string{{"<name>", "web"}}}},
			want:  []command{{file: "f.md", line: 1, text: "kubectl describe ha web"}},
		},
		{
			name:  "a YAML block is applied",
			block: fencedBlock{lang: "yaml", line: 5, text: "kind: A"},
			want:  []command{{file: "f.md", line: 5, text: "kubectl apply -f - <<'DOCS_TEST_EOF'\nkind: A\nDOCS_TEST_EOF"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := blockCommands("f.md", tc.block)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := blockCommands("f.md", fencedBlock{lang: "sh", line: 3, text: "cat <<EOF\nx"}); err == nil || !strings.Contains(err.Error(), "f.md:3") {
		t.Errorf("an unclosed heredoc gave %v, want an error naming f.md:3", err)
	}
}

func TestMatchesShown(t *testing.T) {
	output := "Error from server (BadRequest): admission webhook \"validation.webhook.karpenter.sh\" denied the request:\n" +
		"validation failed: invalid PromQL: 1:14: parse error: unclosed left parenthesis: spec.metrics[0].prometheus.query\n"
	for _, tc := range []struct {
		shown []string
		want  bool
	}{
		{[]string{"Error from server (BadRequest): admission webhook \"validation.webhook.karpenter.sh\" denied the request:", "invalid PromQL: ... unclosed left parenthesis: spec.metrics[0].prometheus.query"}, true},
		{[]string{"invalid PromQL:   …  spec.metrics[0].prometheus.query"}, true},
		{[]string{"spec.metrics[0].prometheus.query ... invalid PromQL"}, false},
		{[]string{"unclosed right parenthesis"}, false},
	} {
		if got := matchesShown(output, tc.shown); got != tc.want {
			t.Errorf("matchesShown(%q) = %t, want %t", tc.shown, got, tc.want)
		}
	}
}

func TestCommandWantsFailure(t *testing.T) {
	for shown, want := range map[string]bool{"": false, "Error from server (Forbidden): x": true, "error: unknown flag": true, `The HorizontalAutoscaler "x" is invalid: spec`: true, "NAME READY": false} {
		c := command{}
		if shown != "" {
			c.shown = []string{shown}
		}
		if got := c.wantsFailure(); got != want {
			t.Errorf("shown %q: wantsFailure %t, want %t", shown, got, want)
		}
	}
}

func TestInlineCommands(t *testing.T) {
	markdown := "Run `kubectl get ha` or ``kubectl describe\n  ha web``.\n\n" +
		"```sh\nkubectl `not inline`\n```\n\n" +
		"| symptom | fix |\n|---|---|\n| x | `kubectl get pod <pod> -o yaml \\| grep ARN` |\n\n" +
		"Not commands: `make test`, `kubectlx get`, `kubectl`.\n"
	want := []inlineCommand{
		{line: 1, text: "kubectl get ha"},
		{line: 1, text: "kubectl describe ha web"},
		{line: 10, text: "kubectl get pod <pod> -o yaml | grep ARN"},
		{line: 12, text: "kubectl"},
	}
	if got := inlineCommands(markdown); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		command, inline string
		want            bool
	}{
		{"kubectl get ha,mp,sng -A", "kubectl get ha,mp,sng -A", true},
		{"kubectl describe node <node>   # its Events", "kubectl describe node <node>", true},
		{"kubectl -n karpenter get pod <pod> -o yaml |\n  grep AWS_ROLE_ARN", "kubectl -n karpenter get pod <pod> -o yaml | grep AWS_ROLE_ARN", true},
		{"kubectl apply --server-side -f releases/aws/$VERSION.yaml", "kubectl apply --server-side -f releases/aws/…", true},
		{"helm upgrade --install karpenter charts/karpenter --set a=1 --set b=2", "helm upgrade --install karpenter charts/karpenter ... --set b=...", true},
		{"kubectl get hax", "kubectl get ha", false},
		{"kubectl get ha", "kubectl get ha -A", false},
		{"helm upgrade --install karpenter charts/karpenter --set a=1", "helm upgrade --install karpenter charts/karpenter ... --set b=...", false},
	} {
		if got := covers(tc.command, tc.inline); got != tc.want {
			t.Errorf("covers(%q, %q) = %t, want %t", tc.command, tc.inline, got, tc.want)
		}
	}
	for text, want := range map[string]bool{"kubectl": true, "kubectl apply": true, "kubectl get ha": false} {
		if got := (inlineCommand{text: text}).names(); got != want {
			t.Errorf("%q names a command: %t, want %t", text, got, want)
		}
	}
}

func TestIsTranscript(t *testing.T) {
	for text, want := range map[string]bool{"$ kubectl apply -f ha.yaml\nError from server": true, "\n  $ ls": true, "[01:16] ▶ 30 shop pods": false, "nodes ─┐": false} {
		if got := isTranscript(text); got != want {
			t.Errorf("isTranscript(%q) = %t, want %t", text, got, want)
		}
	}
}
