package docs_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// command is one command of a shell block a doc marks to run, as a reader would paste it.
type command struct {
	file string
	// line is the 1-based line of the command's first line in file.
	line int
	text string
	// shown is the output the doc shows for the command: the comment lines right under it
	// (no blank line between), without their "# ". Checked loosely (matchesShown).
	shown []string
}

// failureShown is how shown output starts when the command is shown failing: kubectl's
// refusals by a webhook, by the schema, or of its own. Such a command must exit non-zero;
// every other must exit 0.
var failureShown = regexp.MustCompile(`^(Error from server|The \S+ "[^"]*" is invalid:|error:)`)

// wantsFailure says whether the doc shows the command failing.
func (c command) wantsFailure() bool {
	return len(c.shown) > 0 && failureShown.MatchString(c.shown[0])
}

// heredoc matches a heredoc's start (`<<EOF`, `<<-'EOF'`), not a here-string (`<<<`).
var heredoc = regexp.MustCompile(`(?:^|[^<])<<-?\s*['"]?(\w+)['"]?`)

// runnable is a block a doc marks to run, its placeholders replaced.
func runnable(b fencedBlock) string {
	text := b.text
	for _, p := range b.placeholders {
		text = strings.ReplaceAll(text, p[0], p[1])
	}
	return text
}

// blockCommands splits a run-marked block of file into commands: a YAML block is applied with
// kubectl, as the doc tells its reader; a shell block's commands are its lines, with their `\`
// and trailing-pipe continuations and heredocs.
func blockCommands(file string, b fencedBlock) ([]command, error) {
	text := runnable(b)
	if !isShell(b.lang) {
		return []command{{file: file, line: b.line, text: "kubectl apply -f - <<'DOCS_TEST_EOF'\n" + text + "\nDOCS_TEST_EOF"}}, nil
	}
	lines := strings.Split(text, "\n")
	var commands []command
	// attached is the command comment lines below belong to, until a blank line.
	var attached *command
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		switch {
		case trimmed == "":
			attached = nil
			continue
		case strings.HasPrefix(trimmed, "#"):
			if attached != nil {
				attached.shown = append(attached.shown, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			}
			continue
		}
		start := i
		for continues(lines[i]) && i+1 < len(lines) {
			i++
		}
		for _, line := range lines[start : i+1] {
			m := heredoc.FindStringSubmatch(stripComment(line))
			if m == nil {
				continue
			}
			end := i + 1
			for end < len(lines) && strings.TrimSpace(lines[end]) != m[1] {
				end++
			}
			if end == len(lines) {
				return nil, fmt.Errorf("%s:%d: the heredoc %s is never closed", file, b.line+start, m[1])
			}
			i = end
		}
		commands = append(commands, command{file: file, line: b.line + start, text: strings.Join(lines[start:i+1], "\n")})
		attached = &commands[len(commands)-1]
	}
	return commands, nil
}

// continues says whether a command goes on to the next line: a trailing `\`, pipe or `&&`.
func continues(line string) bool {
	line = strings.TrimSpace(stripComment(line))
	return strings.HasSuffix(line, `\`) || strings.HasSuffix(line, "|") || strings.HasSuffix(line, "&&")
}

// stripComment drops a trailing ` # comment` outside quotes, as the shell would.
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// matchesShown says whether a command's output holds what the doc shows, loosely: whitespace
// runs count as one space, and "...", "…" and the ends of shown lines stand for anything; the
// pieces between must appear in order.
func matchesShown(output string, shown []string) bool {
	got := strings.Join(strings.Fields(output), " ")
	want := strings.ReplaceAll(strings.Join(shown, "..."), "…", "...")
	for _, piece := range strings.Split(want, "...") {
		piece = strings.Join(strings.Fields(piece), " ")
		at := strings.Index(got, piece)
		if at < 0 {
			return false
		}
		got = got[at+len(piece):]
	}
	return true
}

// script is the bash script that runs a doc's commands in order, in one shell so that an
// `export` or `cd` carries on as in a reader's terminal. Each command's output and exit status
// go to files of dir, named by its index, for the test to judge.
func script(commands []command, dir string) string {
	var b strings.Builder
	b.WriteString("set -o pipefail\n")
	for i, c := range commands {
		out := strconv.Quote(fmt.Sprintf("%s/%d", dir, i))
		fmt.Fprintf(&b, "# %s:%d\n{\n%s\n} >%s.out 2>&1 </dev/null\necho $? >%s.rc\n", c.file, c.line, c.text, out, out)
	}
	return b.String()
}
