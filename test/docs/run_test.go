package docs_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
)

// docCommands are the commands a Markdown file marks to run, in its order.
type docCommands struct {
	file     string
	commands []command
}

// readCommands returns the run-marked blocks of README.md and docs/*.md as commands, and
// fails naming file:line for a shell block marked neither run nor skip, a transcript outside a
// shell block, and an inline command no marked block holds (inline_test.go says why).
func readCommands(t *testing.T) []docCommands {
	t.Helper()
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	markdown, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []docCommands
	// marked are the commands of every run- or skip-marked shell block, for inline commands to match.
	var marked []string
	inline := map[string][]inlineCommand{}
	for _, path := range append([]string{filepath.Join(root, "README.md")}, markdown...) {
		file, text := read(t, root, path)
		blocks, err := fencedBlocks(text)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		inline[file] = inlineCommands(text)
		doc := docCommands{file: file}
		for _, b := range blocks {
			if isShell(b.lang) && (b.run || b.skip != "") {
				// As written, placeholders and all, as an inline command shows them too.
				written := b
				written.placeholders = nil
				commands, err := blockCommands(file, written)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range commands {
					marked = append(marked, c.text)
				}
			}
			switch {
			case b.lang == "" && isTranscript(b.text):
				t.Errorf("%s:%d: a transcript (`$ ` commands) in a block with no language, so it never runs: "+
					"write it as a marked sh block, the output as comment lines under its command", file, b.line-1)
			case b.run && b.lang != "sh" && b.lang != "bash" && b.lang != "shell" && b.lang != "yaml" && b.lang != "yml":
				t.Errorf("%s:%d: only sh, bash, shell and yaml blocks run, not %q; write a transcript as sh with its output as comments under the command", file, b.line-1, b.lang)
			case b.run:
				commands, err := blockCommands(file, b)
				if err != nil {
					t.Fatal(err)
				}
				doc.commands = append(doc.commands, commands...)
			case isShell(b.lang) && b.skip == "":
				t.Errorf("%s:%d: a shell block marked neither `<!-- docs-test: run -->` nor `<!-- docs-test: skip <reason> -->`: "+
					"mark it run if it works against `make sandbox`, or say why it cannot", file, b.line-1)
			}
		}
		if len(doc.commands) > 0 {
			docs = append(docs, doc)
		}
	}
	for _, file := range slices.Sorted(maps.Keys(inline)) {
		for _, c := range inline[file] {
			if !c.names() && !slices.ContainsFunc(marked, func(command string) bool { return covers(command, c.text) }) {
				t.Errorf("%s:%d: the command `%s` is written inline, and no marked shell block holds it, so nothing runs it: "+
					"put it in a fenced sh block marked run (or skip, saying why) where the reader needs it", file, c.line, c.text)
			}
		}
	}
	return docs
}

func TestShellBlocksAreMarked(t *testing.T) {
	docs := readCommands(t)
	if len(docs) == 0 {
		t.Fatal("no doc marks a block to run")
	}
}

// TestDocCommands runs the blocks the docs mark `run` against the sandbox's stack, as a reader
// of docs/sandbox.md would in a shell holding the line the banner prints: one shell per doc,
// in the repository's root, the examples applied and Ready. Each command must exit 0, or
// non-zero when the doc shows it refused, and print what the doc shows under it.
func TestDocCommands(t *testing.T) {
	docs := readCommands(t)
	for _, tool := range []string{"bash", "kubectl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs' commands need %s on PATH, %v", tool, err)
		}
	}
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	controller, webhook, err := sandbox.Build(filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stack, err := sandbox.Start(ctx, sandbox.Options{
		Dir: filepath.Join(dir, "stack"), ControllerBinary: controller, WebhookBinary: webhook, Logf: t.Logf,
	})
	if err != nil {
		t.Fatalf("starting the sandbox's stack (logs in %s), %v", dir, err)
	}
	t.Cleanup(func() {
		if err := stack.Stop(); err != nil {
			t.Logf("stopping the stack, %v", err)
		}
	})
	examples, err := sandbox.Examples()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(examples)) {
		if err := sandbox.Apply(ctx, stack.Env.Client, examples[name]); err != nil {
			t.Fatal(err)
		}
		for _, object := range examples[name] {
			eventually.Holds(t, fmt.Sprintf("%s %s Ready", object.GetKind(), object.GetName()), func() (bool, string, error) {
				return sandbox.Ready(ctx, stack.Env.Client, object)
			}, eventually.Timeout(2*time.Minute))
		}
	}
	// A HOME of its own keeps kubectl's cache out of the user's.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o750); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, stack.ShellEnv(stack.Env.KubeconfigPath)...)
	// The go commands of the docs (go run ./cmd/kubectl-karpenter) use this machine's module and
	// build caches, as a reader's shell does, not the fresh HOME's, and the flavour `make` builds
	// in (CGO_ENABLED, GOFLAGS), whose compiled packages are in that cache.
	for _, variable := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "CGO_ENABLED"} {
		out, err := exec.Command("go", "env", variable).Output()
		if err != nil {
			t.Fatalf("go env %s, %v", variable, err)
		}
		env = append(env, variable+"="+strings.TrimSpace(string(out)))
	}

	for _, doc := range docs {
		t.Run(doc.file, func(t *testing.T) {
			out := t.TempDir()
			runScript := filepath.Join(out, "script.sh")
			if err := os.WriteFile(runScript, []byte(script(doc.commands, out)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", runScript) //nolint:gosec // G204: the docs' own commands.
			cmd.Dir, cmd.Env = root, env
			if output, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("running the commands of %s, %v\n%s", doc.file, err, output)
			}
			for i, c := range doc.commands {
				judge(t, c, filepath.Join(out, strconv.Itoa(i)))
			}
		})
	}
}

// judge checks one command's exit status and output, saved under prefix by script.
func judge(t *testing.T, c command, prefix string) {
	t.Helper()
	rc, err := os.ReadFile(prefix + ".rc") //nolint:gosec // G304: the test's own output.
	if err != nil {
		t.Errorf("%s:%d: the command never ran (the shell stopped before it), %v", c.file, c.line, err)
		return
	}
	output, err := os.ReadFile(prefix + ".out") //nolint:gosec // G304: the test's own output.
	if err != nil {
		t.Fatal(err)
	}
	status, err := strconv.Atoi(strings.TrimSpace(string(rc)))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.wantsFailure() && status == 0:
		t.Errorf("%s:%d: the doc shows this command refused, but it exited 0:\n%s\n%s", c.file, c.line, c.text, output)
	case !c.wantsFailure() && status != 0:
		t.Errorf("%s:%d: exit status %d:\n%s\n%s", c.file, c.line, status, c.text, output)
	case len(c.shown) > 0 && !matchesShown(string(output), c.shown):
		t.Errorf("%s:%d: the output does not hold what the doc shows\n  shown: %s\n%s\n%s", c.file, c.line, strings.Join(c.shown, "\n         "), c.text, output)
	}
}
