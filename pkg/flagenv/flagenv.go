// Package flagenv lets every flag of a binary be set from the environment, as Kubernetes
// manifests commonly do, with the same parsing and errors as on the command line; and reads
// upstream Karpenter's environment variables where they have a meaning here.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
)

// Alias is an environment variable of upstream Karpenter that sets one of this binary's flags,
// whose own variable is named otherwise (METRICS_PORT sets --metrics-bind-address).
type Alias struct {
	Variable string
	Flag     string
	// Value turns the variable's value into the flag's; nil takes it as it is.
	Value func(string) (string, error)
}

// Ignored is an environment variable of upstream Karpenter that has no meaning here.
type Ignored struct {
	Variable string
	// Inert is the value that asks for what this binary does anyway, e.g. upstream's default;
	// "" when every value is reported.
	Inert string
	// Why says what this binary does instead.
	Why string
}

// Option adds to what Parse reads from the environment.
type Option func(*options)

type options struct {
	aliases []Alias
	ignored []Ignored
	warn    func(string)
}

// WithAliases reads upstream variables into this binary's flags.
func WithAliases(aliases ...Alias) Option {
	return func(o *options) { o.aliases = append(o.aliases, aliases...) }
}

// WithIgnored reports the upstream variables that have no meaning here when they are set.
func WithIgnored(ignored ...Ignored) Option {
	return func(o *options) { o.ignored = append(o.ignored, ignored...) }
}

// WarnTo receives the warnings (by default the standard logger, on stderr), for a binary that
// logs them once its logger is set up.
func WarnTo(warn func(string)) Option {
	return func(o *options) { o.warn = warn }
}

// Parse parses args, then sets each flag not given there from the environment variable named
// like it: upper case, dashes as underscores (--log-level from LOG_LEVEL), else from an alias.
// The command line wins over the environment, and a flag's own variable over an alias; each
// time both are set with different values a warning says which won. A value that does not
// parse is an error naming the variable, never a silent fallback to the default.
func Parse(fs *flag.FlagSet, args []string, opts ...Option) error {
	o := options{warn: func(message string) { log.Print(message) }}
	for _, opt := range opts {
		opt(&o)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	aliasesOf := map[string][]Alias{}
	for _, alias := range o.aliases {
		aliasesOf[alias.Flag] = append(aliasesOf[alias.Flag], alias)
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		// winner names where the flag's value came from, once one source set it.
		winner := ""
		if given[f.Name] {
			winner = fmt.Sprintf("--%s=%s from the command line", f.Name, f.Value)
		}
		name := VariableFor(f.Name)
		if value, ok := os.LookupEnv(name); ok {
			switch {
			case winner != "":
				if value != f.Value.String() {
					o.warn(fmt.Sprintf("%s wins over %s=%q", winner, name, value))
				}
			default:
				if err := fs.Set(f.Name, value); err != nil {
					errs = append(errs, fmt.Errorf("%s=%q, %w", name, value, err))
					return
				}
				winner = fmt.Sprintf("%s=%q", name, value)
			}
		}
		for _, alias := range aliasesOf[f.Name] {
			raw, ok := os.LookupEnv(alias.Variable)
			if !ok {
				continue
			}
			value := raw
			if alias.Value != nil {
				var err error
				if value, err = alias.Value(raw); err != nil {
					errs = append(errs, fmt.Errorf("%s=%q, %w", alias.Variable, raw, err))
					continue
				}
			}
			if winner != "" {
				if value != f.Value.String() {
					o.warn(fmt.Sprintf("%s wins over %s=%q", winner, alias.Variable, raw))
				}
				continue
			}
			if err := fs.Set(f.Name, value); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (for --%s), %w", alias.Variable, raw, f.Name, err))
				continue
			}
			winner = fmt.Sprintf("%s=%q", alias.Variable, raw)
		}
	})
	for _, ignored := range o.ignored {
		value, ok := os.LookupEnv(ignored.Variable)
		if ok && (ignored.Inert == "" || !strings.EqualFold(value, ignored.Inert)) {
			o.warn(fmt.Sprintf("%s=%q is upstream Karpenter's and has no effect here: %s", ignored.Variable, value, ignored.Why))
		}
	}
	return errors.Join(errs...)
}

// VariableFor is the environment variable that sets the flag named flagName.
func VariableFor(flagName string) string {
	return strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Reference is a Markdown table of a binary's flags for docs/reference/settings.md: each flag,
// the environment variables that set it (its own first, then upstream's), the chart value that
// sets it (chartValues, by flag name), its default and its usage.
func Reference(fs *flag.FlagSet, aliases []Alias, chartValues map[string]string) string {
	var b strings.Builder
	b.WriteString("| flag | environment | chart value | default | meaning |\n| --- | --- | --- | --- | --- |\n")
	fs.VisitAll(func(f *flag.Flag) {
		variables := []string{"`" + VariableFor(f.Name) + "`"}
		for _, alias := range aliases {
			if alias.Flag == f.Name {
				variables = append(variables, "`"+alias.Variable+"` (upstream's)")
			}
		}
		chartValue := "`controller.env`"
		if value, ok := chartValues[f.Name]; ok {
			chartValue = "`" + value + "`"
		}
		def := "`" + f.DefValue + "`"
		if f.DefValue == "" {
			def = "none"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s | %s |\n", f.Name, strings.Join(variables, ", "), chartValue, def, strings.ReplaceAll(f.Usage, "|", `\|`))
	})
	return b.String()
}
