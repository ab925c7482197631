package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// Formats of -o.
const (
	FormatTable = "table"
	FormatYAML  = "yaml"
	FormatJSON  = "json"
)

// Write prints the report in the format: a table for people, YAML or JSON for scripts.
func Write(w io.Writer, report *Report, format string) error {
	switch format {
	case FormatJSON:
		encoder := json.NewEncoder(w)
		encoder.SetIndent("", "  ")
		if err := encoder.Encode(report); err != nil {
			return fmt.Errorf("writing JSON, %w", err)
		}
		return nil
	case FormatYAML:
		out, err := yaml.Marshal(report)
		if err != nil {
			return fmt.Errorf("writing YAML, %w", err)
		}
		_, err = w.Write(out)
		return err
	case FormatTable, "":
		return writeTable(w, report)
	}
	return fmt.Errorf("unknown output format %q: use table, yaml or json", format)
}

func writeTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.NewNodes) > 0 {
		fmt.Fprintln(tw, "NEW NODE\tPOOL\tINSTANCE TYPE\tZONE\tCAPACITY TYPE\t$/H\tPODS\tALSO FITS")
		spot := false
		for i, n := range r.NewNodes {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.4f\t%d\t%s\n", i+1, n.Pool, n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour, len(n.Pods), alsoFits(n))
			spot = spot || n.CapacityType == v1alpha5.CapacityTypeSpot
		}
		fmt.Fprintln(tw)
		if spot {
			fmt.Fprintln(tw, spotNote)
			fmt.Fprintln(tw)
		}
	} else {
		fmt.Fprintln(tw, "No new nodes.")
		fmt.Fprintln(tw)
	}
	if len(r.NewNodes) > 0 || len(r.ExistingNodes) > 0 {
		fmt.Fprintln(tw, "POD\tGOES TO")
		for i, n := range r.NewNodes {
			for _, pod := range n.Pods {
				fmt.Fprintf(tw, "%s\tnew node %d (%s)\n", pod, i+1, n.InstanceType)
			}
		}
		for _, n := range r.ExistingNodes {
			where := "existing node " + n.Name
			if n.Launching {
				where = "launching node " + n.Name
			}
			for _, pod := range n.Pods {
				fmt.Fprintf(tw, "%s\t%s\n", pod, where)
			}
		}
		fmt.Fprintln(tw)
	}
	if len(r.Unschedulable) > 0 {
		fmt.Fprintln(tw, "UNSCHEDULABLE POD\tREASON")
		for _, u := range r.Unschedulable {
			fmt.Fprintf(tw, "%s\t%s\n", u.Pod, u.Reason)
		}
		fmt.Fprintln(tw)
	}
	for _, s := range r.SkippedPools {
		fmt.Fprintf(tw, "%s %s plans no node: %s\n", s.Kind, s.Name, s.Reason)
	}
	for _, s := range r.SkippedNodeOverlays {
		fmt.Fprintf(tw, "NodeOverlay %s applies nowhere: %s\n", s.Name, s.Reason)
	}
	existing := 0
	for _, n := range r.ExistingNodes {
		existing += len(n.Pods)
	}
	fmt.Fprintf(tw, "%d new nodes add $%.4f/h; %d pods go to existing or launching nodes; %d pods cannot be placed.\n", len(r.NewNodes), r.PricePerHour, existing, len(r.Unschedulable))
	if r.Planner == "packer-stopped" {
		fmt.Fprintln(tw, "The batch packer ran out of its budget (--batch-packer-budget): some new nodes keep the types the one-pod-at-a-time scheduler chose.")
	}
	if c := r.Consolidation; c != nil {
		fmt.Fprintln(tw)
		writeConsolidation(tw, "Consolidation", c)
	}
	if c := r.NodePoolConsolidation; c != nil {
		fmt.Fprintln(tw)
		writeConsolidation(tw, "NodePool consolidation", c)
	}
	return tw.Flush()
}

// spotNote says how far a spot node's offering is a prediction: EC2 launches spot by spare
// capacity first (price-capacity-optimized), which no one outside EC2 can read.
const spotNote = "Spot nodes: EC2 weighs the candidates' spare capacity, then their price: it launches the offering shown\n" +
	"while its capacity is ample, else another candidate."

// alsoFits are the other candidates a capacity error would fall through to, a few of them.
func alsoFits(n NewNode) string {
	const shown = 3
	var others []string
	for _, name := range n.InstanceTypes {
		if name != n.InstanceType {
			others = append(others, name)
		}
	}
	if len(others) > shown {
		return strings.Join(others[:shown], ",") + fmt.Sprintf(" +%d", len(others)-shown)
	}
	if len(others) == 0 {
		return "-"
	}
	return strings.Join(others, ",")
}

// writeConsolidation writes what a consolidation would do, under its title, and why it keeps
// each other node.
func writeConsolidation(w io.Writer, title string, c *Consolidation) {
	switch {
	case c.Unsettled != "":
		fmt.Fprintf(w, "%s: nothing now, the cluster is not settled: %s.\n", title, c.Unsettled)
	case c.Action == "":
		fmt.Fprintf(w, "%s: nothing to delete or replace.\n", title)
	case len(c.Replacements) > 0:
		replacements := make([]string, 0, len(c.Replacements))
		for _, r := range c.Replacements {
			replacements = append(replacements, fmt.Sprintf("%s in %s (%s, $%.4f/h)", r.InstanceType, r.Zone, r.CapacityType, r.PricePerHour))
		}
		fmt.Fprintf(w, "%s: replace %s ($%.4f/h) with %s, saving $%.4f/h.\n", title, strings.Join(c.Nodes, ", "), c.PricePerHour,
			strings.Join(replacements, " and "), c.SavingPerHour)
	default:
		fmt.Fprintf(w, "%s: delete %s, saving $%.4f/h.\n", title, strings.Join(c.Nodes, ", "), c.SavingPerHour)
	}
	if len(c.Kept) > 0 {
		fmt.Fprintln(w, "KEPT NODE\tREASON\tWHY")
		for _, k := range c.Kept {
			fmt.Fprintf(w, "%s\t%s\t%s\n", k.Name, k.Reason, k.Message)
		}
	}
}
