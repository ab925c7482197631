package docs_test

import (
	"regexp"
	"slices"
	"strings"
)

// A command written inline — in a table cell or a sentence — is copied by a reader as surely as
// one in a fenced block, but no marker can sit before it, so nothing would run it. The rule that
// keeps such commands tested: an inline code span that starts with a tool a reader runs against
// a cluster, a cloud account or the sandbox (inlineTools) is either
//
//   - the tool and one word (`kubectl apply`, `kubectl scale`): the name of a command, not a
//     recipe, or
//   - the start of a command of a marked shell block of README.md or docs/*.md (covers), so the
//     reader has a block to copy and the test runs it, or records why it cannot.
//
// Anything else fails TestShellBlocksAreMarked, naming the file and line. The rule reads only a
// span's text, so tables need no marker convention of their own, a recipe is caught wherever it
// is written (a cell, a sentence, a list), and naming a command in prose stays free.
var inlineTools = []string{"kubectl", "curl", "aws", "helm", "eksctl"}

// inlineCommand is a code span of a Markdown file, outside fenced blocks, that starts with one
// of inlineTools.
type inlineCommand struct {
	// line is the 1-based line where the span starts.
	line int
	// text is the span's text with whitespace runs as one space, as a reader would copy it.
	text string
}

// codeSpan matches an inline code span: a run of backticks, then anything up to the same run.
// Go's regexp has no backreferences, so the two lengths the docs use are spelt out.
var codeSpan = regexp.MustCompile("(?s)``(.+?)``|`([^`]+?)`")

// inlineCommands returns the code spans of a Markdown file that start with one of inlineTools.
// Fenced blocks are blanked first (their lines kept, so line numbers hold); in a table row, `\|`
// is a pipe, as the table shows it.
func inlineCommands(markdown string) []inlineCommand {
	lines := strings.Split(markdown, "\n")
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") && !strings.Contains(strings.TrimSpace(line)[3:], "`") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		switch {
		case fenced:
			lines[i] = ""
		case strings.HasPrefix(strings.TrimSpace(line), "|"):
			lines[i] = strings.ReplaceAll(line, `\|`, "|")
		}
	}
	text := strings.Join(lines, "\n")
	var commands []inlineCommand
	for _, m := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		// The first group is the body of a double-backtick span, the second of a single one.
		bounds := m[2:4]
		if bounds[0] < 0 {
			bounds = m[4:6]
		}
		words := strings.Fields(text[bounds[0]:bounds[1]])
		if len(words) == 0 || !slices.Contains(inlineTools, words[0]) {
			continue
		}
		commands = append(commands, inlineCommand{line: strings.Count(text[:m[0]], "\n") + 1, text: strings.Join(words, " ")})
	}
	return commands
}

// names says whether an inline command is only the name of a command: its tool and one word.
func (c inlineCommand) names() bool {
	return len(strings.Fields(c.text)) <= 2
}

// ellipsis is how an inline command elides words: "..." or "…".
var ellipsis = regexp.MustCompile(`\.\.\.|…`)

// isTranscript says whether a block's first line is a shell prompt's: a pasted terminal session.
func isTranscript(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "$ ")
}

// covers says whether a command of a marked block starts with an inline command, word by word
// (whitespace runs count as one space, and a trailing ` # comment` is not part of the command);
// an ellipsis in the inline command stands for any words, the pieces between it in order.
func covers(command, inline string) bool {
	var commandWords []string
	for _, line := range strings.Split(command, "\n") {
		commandWords = append(commandWords, strings.Fields(stripComment(line))...)
	}
	command = strings.Join(commandWords, " ")
	pieces := ellipsis.Split(inline, -1)
	first := strings.Join(strings.Fields(pieces[0]), " ")
	// The first piece ends on a word boundary of the command, unless an ellipsis follows it.
	starts := command == first || strings.HasPrefix(command, first+" ") || (len(pieces) > 1 && strings.HasPrefix(command, first))
	if !starts {
		return false
	}
	rest := command[len(first):]
	for _, piece := range pieces[1:] {
		piece = strings.Join(strings.Fields(piece), " ")
		at := strings.Index(rest, piece)
		if at < 0 {
			return false
		}
		rest = rest[at+len(piece):]
	}
	return true
}
