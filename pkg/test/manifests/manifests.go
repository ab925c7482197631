// Package manifests decodes YAML manifests into unstructured objects, as kubectl apply reads
// them, so tests exercise exactly what users write.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Decode parses one YAML document, failing the test if it is not an object.
func Decode(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	objects, err := DecodeAll(bytes.NewBufferString(manifest))
	if err != nil || len(objects) != 1 {
		t.Fatalf("decoding %s: %d objects, %v", manifest, len(objects), err)
	}
	return objects[0]
}

// DecodeFile parses every document of a multi-document YAML file.
func DecodeFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	file, err := os.Open(path) //nolint:gosec // G304: a manifest the test names.
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	objects, err := DecodeAll(file)
	if err != nil {
		t.Fatalf("decoding %s, %v", path, err)
	}
	return objects
}

// DecodeAll parses every non-empty document of a multi-document YAML stream.
func DecodeAll(r io.Reader) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objects []*unstructured.Unstructured
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, err
		}
		object := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(document, &object.Object); err != nil {
			return nil, fmt.Errorf("decoding %s, %w", document, err)
		}
		if len(object.Object) > 0 {
			objects = append(objects, object)
		}
	}
}
