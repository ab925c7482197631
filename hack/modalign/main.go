// Command modalign fails when a build of another module of this repository (hack/kube, which
// builds the Kubernetes control plane the tests run; test/oracle) compiles a module at another
// version than the main module's packages and tests compile it. Packages of one module version
// compile once for every build of one flavour (the Makefile's); at another version they compile
// again, and the Kubernetes libraries are the bulk of a first run's compile time.
//
//	go run ./hack/modalign -C hack/kube k8s.io/kubernetes/cmd/kube-apiserver
//	go run ./hack/modalign -C test/oracle -test ./...
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

func main() {
	dir := flag.String("C", "", "the other module's directory")
	tests := flag.Bool("test", false, "the packages' tests are built too")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./hack/modalign -C <module directory> [-test] <packages>...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *dir == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	const modules = "{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}"
	mainModule, err := versions(".", "-deps", "-test", "-f", modules, "./...")
	if err != nil {
		fmt.Fprintln(os.Stderr, "modalign:", err)
		os.Exit(1)
	}
	args := []string{"-deps", "-f", modules}
	if *tests {
		args = append(args, "-test")
	}
	built, err := versions(*dir, append(args, flag.Args()...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modalign:", err)
		os.Exit(1)
	}
	lower, higher := differing(mainModule, built)
	if len(lower) > 0 {
		fmt.Fprintf(os.Stderr, "modalign: %s compiles %d modules at lower versions than the main module, so they compile twice on a first run; align them:\n  (cd %s && go get %s)\n",
			*dir, len(lower), *dir, strings.Join(lower, " "))
	}
	if len(higher) > 0 {
		fmt.Fprintf(os.Stderr, "modalign: %s compiles %d modules at higher versions than the main module, so they compile twice on a first run; align them:\n  go get %s\n",
			*dir, len(higher), strings.Join(higher, " "))
	}
	if len(lower)+len(higher) > 0 {
		os.Exit(1)
	}
}

// differing are the modules both compile at different versions: those built lower than
// mainModule compiles them, as path@mainModule's version, and those built higher, as
// path@built's version; each sorted.
func differing(mainModule, built map[string]string) (lower, higher []string) {
	for path, version := range built {
		want, ok := mainModule[path]
		switch {
		case !ok:
		case semver.Compare(version, want) < 0:
			lower = append(lower, path+"@"+want)
		case semver.Compare(version, want) > 0:
			higher = append(higher, path+"@"+version)
		}
	}
	slices.Sort(lower)
	slices.Sort(higher)
	return lower, higher
}

// versions runs go list in dir with args, each line of its output "<module path> <version>",
// and gives each module's version; lines without a version (the module itself, standard
// library packages) are left out.
func versions(dir string, args ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...) //nolint:gosec // G204: go itself, listing the modules of this repository.
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the modules of %s, %w: %s", dir, err, stderr.String())
	}
	found := map[string]string{}
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		if path, version, ok := strings.Cut(scanner.Text(), " "); ok && version != "" {
			found[path] = version
		}
	}
	return found, scanner.Err()
}
