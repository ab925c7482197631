package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// commentWidth is where warnings wrap, so that the output reads in a terminal.
const commentWidth = 100

// Write prints the results as YAML documents for kubectl apply: for each Provisioner a comment
// naming it and each of its warnings, then its NodePool and its EC2NodeClass.
func Write(w io.Writer, results []*Result) error {
	var out bytes.Buffer
	for i, r := range results {
		if i > 0 {
			out.WriteString("---\n")
		}
		fmt.Fprintf(&out, "# Provisioner %s, converted by kubectl karpenter convert (docs/migrating-to-v1.md).\n", r.Provisioner)
		for _, warning := range r.Warnings {
			writeComment(&out, fmt.Sprintf("WARNING %s: %s", warning.Field, warning.Message))
		}
		for j, object := range []any{r.NodePool, r.EC2NodeClass} {
			if j > 0 {
				out.WriteString("---\n")
			}
			manifest, err := manifestOf(object)
			if err != nil {
				return fmt.Errorf("writing the objects of Provisioner %s, %w", r.Provisioner, err)
			}
			out.Write(manifest)
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}

// manifestOf is object as a user writes it: no status, no creation timestamp, no empty
// template metadata.
func manifestOf(object any) ([]byte, error) {
	raw, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	delete(fields, "status")
	if metadata, ok := fields["metadata"].(map[string]any); ok {
		delete(metadata, "creationTimestamp")
	}
	if limits, ok := lookup(fields, "spec", "limits").(map[string]any); ok {
		for name, value := range limits {
			limits[name] = plainQuantity(value)
		}
	}
	if template, ok := lookup(fields, "spec", "template").(map[string]any); ok {
		if metadata, ok := template["metadata"].(map[string]any); ok && len(metadata) == 0 {
			delete(template, "metadata")
		}
	}
	return yaml.Marshal(fields)
}

// plainQuantity is a whole decimal quantity as the number a user writes (1000, not its
// canonical 1k, which reads as a typo for 1Ki), any other value as it is.
func plainQuantity(value any) any {
	text, ok := value.(string)
	if !ok {
		return value
	}
	q, err := resource.ParseQuantity(text)
	if err != nil || q.Format != resource.DecimalSI || q.MilliValue()%1000 != 0 {
		return value
	}
	return q.Value()
}

// lookup is the value at path in nested maps, nil when there is none.
func lookup(fields map[string]any, path ...string) any {
	var value any = fields
	for _, key := range path {
		m, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		value = m[key]
	}
	return value
}

// writeComment writes text as YAML comment lines, wrapped at commentWidth on spaces.
func writeComment(out *bytes.Buffer, text string) {
	prefix := "# "
	line := prefix
	for _, word := range strings.Fields(text) {
		if len(line) > len(prefix) && len(line)+1+len(word) > commentWidth {
			out.WriteString(line + "\n")
			prefix = "#   "
			line = prefix
		}
		if len(line) > len(prefix) {
			line += " "
		}
		line += word
	}
	out.WriteString(line + "\n")
}
