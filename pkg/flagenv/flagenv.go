// Package flagenv lets every flag of a binary be set from the environment, as Kubernetes
// manifests commonly do, with the same parsing and errors as on the command line.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Parse parses args, then sets each flag not given there from the environment variable named
// like it: upper case, dashes as underscores (--log-level from LOG_LEVEL). A value that does
// not parse is an error naming the variable, never a silent fallback to the default.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := VariableFor(f.Name)
		value, ok := os.LookupEnv(name)
		if given[f.Name] || !ok {
			return
		}
		if err := fs.Set(f.Name, value); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q, %w", name, value, err))
		}
	})
	return errors.Join(errs...)
}

// VariableFor is the environment variable that sets the flag named flagName.
func VariableFor(flagName string) string {
	return strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
