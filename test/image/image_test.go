// Package image tests the container image `make image` builds, as a user would get it: the OCI
// archive is unpacked with skopeo and umoci, its config is checked, and its controller and
// webhook run from the unpacked root filesystem (as their own root, user 65532) against the
// sandbox's control plane, so a file the binaries need and the image lacks fails here.
//
// The archive is bin/karpenter-image.oci.tar unless KARPENTER_IMAGE_ARCHIVE names another; the
// test rebuilds it with hack/image.sh first unless KARPENTER_IMAGE_PREBUILT=1 (CI runs `make
// image` just before and sets it).
package image

import (
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/manifests"
	"karpenter.sh/karpenter/test/sandbox"
)

// user is the image's nonroot user, as the Deployments' securityContext runs it.
const user = "65532:65532"

// architectures are the platforms of the image index, with the ELF machine of their binaries.
var architectures = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func TestImage(t *testing.T) {
	archive := imageArchive(t)

	t.Run("index", func(t *testing.T) {
		var index struct {
			MediaType string `json:"mediaType"`
			Manifests []struct {
				Platform struct{ Architecture, OS string } `json:"platform"`
			} `json:"manifests"`
		}
		decodeJSON(t, run(t, "skopeo", "inspect", "--raw", "oci-archive:"+archive), &index)
		var platforms []string
		for _, manifest := range index.Manifests {
			platforms = append(platforms, manifest.Platform.OS+"/"+manifest.Platform.Architecture)
		}
		slices.Sort(platforms)
		if want := []string{"linux/amd64", "linux/arm64"}; index.MediaType != "application/vnd.oci.image.index.v1+json" || !slices.Equal(platforms, want) {
			t.Errorf("the archive holds a %s for %v, want an OCI image index for %v", index.MediaType, platforms, want)
		}
	})

	t.Run("zones from the image", func(t *testing.T) {
		// Embedded zones would hide a zoneinfo missing from the image: the binaries must read it.
		root, err := environment.RepositoryRoot()
		if err != nil {
			t.Fatal(err)
		}
		command := exec.Command("go", "list", "-deps", "./cmd/controller", "./cmd/webhook")
		command.Dir = root
		deps, err := command.Output()
		if err != nil {
			t.Fatalf("go list -deps, %v", err)
		}
		if slices.Contains(strings.Fields(string(deps)), "time/tzdata") {
			t.Errorf("the binaries embed time/tzdata; they must read the image's /usr/share/zoneinfo")
		}
	})

	rootfs := map[string]string{}
	for arch, machine := range architectures {
		rootfs[arch] = unpack(t, archive, arch)
		t.Run(arch, func(t *testing.T) {
			checkConfig(t, archive, arch)
			checkFiles(t, rootfs[arch], machine)
		})
	}
	if t.Failed() {
		return
	}
	t.Run("runs", func(t *testing.T) { runFromRootfs(t, rootfs["amd64"]) })
}

// imageArchive builds the image, unless told it is prebuilt, and returns the archive's path.
func imageArchive(t *testing.T) string {
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	archive := os.Getenv("KARPENTER_IMAGE_ARCHIVE")
	if archive == "" {
		archive = filepath.Join(root, "bin", "karpenter-image.oci.tar")
	}
	if os.Getenv("KARPENTER_IMAGE_PREBUILT") != "1" {
		begin := time.Now()
		run(t, filepath.Join(root, "hack", "image.sh"), "v0.0.0-test", archive)
		t.Logf("built %s in %s", archive, time.Since(begin).Round(time.Second))
	}
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("the image archive, %v (make image builds it)", err)
	}
	return archive
}

// unpack copies one platform out of the archive into an OCI layout and unpacks its root
// filesystem with umoci, as a runtime would.
func unpack(t *testing.T, archive, arch string) string {
	dir := t.TempDir()
	layout := filepath.Join(dir, "layout")
	run(t, "skopeo", "copy", "--quiet", "--override-os", "linux", "--override-arch", arch,
		"oci-archive:"+archive, "oci:"+layout+":"+arch)
	bundle := filepath.Join(dir, "bundle")
	run(t, "umoci", "unpack", "--rootless", "--image", layout+":"+arch, bundle)
	return filepath.Join(bundle, "rootfs")
}

func checkConfig(t *testing.T, archive, arch string) {
	var image struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			User       string   `json:"User"`
			Entrypoint []string `json:"Entrypoint"`
			Cmd        []string `json:"Cmd"`
			Env        []string `json:"Env"`
		} `json:"config"`
	}
	decodeJSON(t, run(t, "skopeo", "inspect", "--config", "--override-os", "linux", "--override-arch", arch, "oci-archive:"+archive), &image)
	if image.Architecture != arch || image.OS != "linux" {
		t.Errorf("platform %s/%s, want linux/%s", image.OS, image.Architecture, arch)
	}
	if !slices.Equal(image.Config.Entrypoint, []string{"/controller"}) || len(image.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want the controller alone", image.Config.Entrypoint, image.Config.Cmd)
	}
	if image.Config.User != user {
		t.Errorf("user %q, want %s", image.Config.User, user)
	}
}

// checkFiles holds what the binaries read besides the API server: CA roots, time zones and the
// nonroot user; and that nothing else is executable, a shell least of all.
func checkFiles(t *testing.T, rootfs string, machine elf.Machine) {
	var executables []string
	err := filepath.WalkDir(rootfs, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || !entry.Type().IsRegular() {
			return err
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		if info.Mode()&0o111 != 0 {
			executables = append(executables, strings.TrimPrefix(path, rootfs))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/controller", "/webhook"}; !slices.Equal(executables, want) {
		t.Errorf("executable files %v, want only %v", executables, want)
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/sh"} {
		if _, err := os.Lstat(filepath.Join(rootfs, shell)); err == nil {
			t.Errorf("the image has a shell, %s", shell)
		}
	}
	for _, binary := range []string{"controller", "webhook"} {
		file, err := elf.Open(filepath.Join(rootfs, binary))
		if err != nil {
			t.Errorf("/%s is not an ELF binary, %v", binary, err)
			continue
		}
		if file.Machine != machine {
			t.Errorf("/%s is built for %s, want %s", binary, file.Machine, machine)
		}
		if interpreter := file.Section(".interp"); interpreter != nil {
			t.Errorf("/%s is dynamically linked; the image has no libc", binary)
		}
		_ = file.Close()
	}

	bundle, err := os.ReadFile(filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt"))
	if err != nil {
		t.Errorf("CA certificates, %v", err)
	} else if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(bundle) || bytes.Count(bundle, []byte("BEGIN CERTIFICATE")) < 50 {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt holds %d certificates, want Debian's bundle",
			bytes.Count(bundle, []byte("BEGIN CERTIFICATE")))
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if err != nil || !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532 (%v):\n%s", err, passwd)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "usr", "share", "zoneinfo", "America", "Los_Angeles")); err != nil {
		t.Errorf("time zones, %v", err)
	}
}

// runFromRootfs starts the sandbox's stack with the image's controller and webhook, each run by
// unshare with the unpacked root filesystem as its root and the image's user: the binaries
// see the image's files and nothing of this machine's. Then it checks that a HorizontalAutoscaler
// is reconciled on a schedule in America/Los_Angeles and that the webhook serves admission.
func runFromRootfs(t *testing.T, rootfs string) {
	dir := t.TempDir()
	binaries := map[string]string{}
	for _, binary := range []string{"controller", "webhook"} {
		binaries[binary] = filepath.Join(dir, binary)
		// The kubeconfig is copied into the image's /tmp: from its root the binary sees nothing
		// else. It embeds its certificates. The image's own CA bundle and zoneinfo apply, never
		// this machine's through the environment.
		script := fmt.Sprintf(`#!/bin/sh
set -e
cp "$KUBECONFIG" %[1]q/tmp/kubeconfig-%[2]s
KUBECONFIG=/tmp/kubeconfig-%[2]s exec env -u SSL_CERT_FILE -u SSL_CERT_DIR -u ZONEINFO \
	unshare --user --map-user=65532 --map-group=65532 --root=%[1]q /%[2]s "$@"
`, rootfs, binary)
		if err := os.WriteFile(binaries[binary], []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	stack, err := sandbox.Start(ctx, sandbox.Options{
		Dir:              filepath.Join(dir, "stack"),
		ControllerBinary: binaries["controller"],
		WebhookBinary:    binaries["webhook"],
		Logf:             t.Logf,
	})
	if err != nil {
		t.Fatalf("starting the image's controller and webhook on the sandbox's stack: %v", err)
	}
	t.Cleanup(func() {
		if err := stack.Stop(); err != nil {
			t.Logf("stopping the stack, %v", err)
		}
		if t.Failed() {
			t.Logf("logs kept in %s", filepath.Join(dir, "stack", "logs"))
		}
	})

	examples, err := sandbox.Examples()
	if err != nil {
		t.Fatal(err)
	}
	// A ScalableNodeGroup, a MetricsProducer scheduled in America/Los_Angeles and a
	// HorizontalAutoscaler following it; the webhook admits each (its defaulting and validation
	// load the time zone too).
	objects := examples["scheduled-capacity.yaml"]
	if len(objects) == 0 {
		t.Fatal("docs/examples/scheduled-capacity.yaml is missing")
	}
	if err := sandbox.Apply(ctx, stack.Env.Client, objects); err != nil {
		t.Fatal(err)
	}
	for _, object := range objects {
		eventually.Holds(t, fmt.Sprintf("%s %s Ready", object.GetKind(), object.GetName()), func() (bool, string, error) {
			return sandbox.Ready(ctx, stack.Env.Client, object)
		}, eventually.Timeout(2*time.Minute))
	}

	// The webhook's validation answers, with its own message, for an unknown zone.
	bad, err := manifests.DecodeAll(strings.NewReader(`
apiVersion: autoscaling.karpenter.sh/v1alpha1
kind: MetricsProducer
metadata: {name: bad-timezone, namespace: default}
spec:
  scheduleSpec:
    timezone: America/Los_Angels
    defaultReplicas: 0
    behaviors:
    - replicas: 3
      start: {weekdays: Mon-Fri, hours: "9"}
      end: {weekdays: Mon-Fri, hours: "17"}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = sandbox.Apply(ctx, stack.Env.Client, []*unstructured.Unstructured{bad[0]})
	if want := `"America/Los_Angels" is not an IANA time zone`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("applying a MetricsProducer with an unknown zone: %v, want the webhook's %q", err, want)
	}
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	command := exec.Command(name, args...)
	var stderr bytes.Buffer
	command.Stderr = &stderr
	out, err := command.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func decodeJSON(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decoding %s, %v", data, err)
	}
}
