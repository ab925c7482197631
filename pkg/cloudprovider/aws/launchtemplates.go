package aws

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
)

// launchTemplateInputs are what a launch template Karpenter makes holds; equal inputs share a
// template.
type launchTemplateInputs struct {
	AMI             string   `json:"ami"`
	SecurityGroups  []string `json:"securityGroups"`
	InstanceProfile string   `json:"instanceProfile"`
	UserData        string   `json:"userData"`
}

// name is the template's name, a hash of the cluster's name and the inputs: it is found again
// by name after a restart and never reused for other inputs, and stays within the 128
// characters EC2 allows whatever the cluster is called.
func (in launchTemplateInputs) name(clusterName string) string {
	sum := sha256.Sum256(append([]byte(clusterName+"\n"), mustJSON(in)...))
	return "karpenter.sh/" + hex.EncodeToString(sum[:])
}

// userData bootstraps an EKS-optimized AMI into the cluster with the node's labels and taints.
// Every value is single-quoted for the shell.
func userData(clusterName, endpoint string, caBundle []byte, labels map[string]string, taints []corev1.Taint) string {
	var kubeletArgs []string
	if len(labels) > 0 {
		var pairs []string
		for _, key := range slices.Sorted(maps.Keys(labels)) {
			pairs = append(pairs, key+"="+labels[key])
		}
		kubeletArgs = append(kubeletArgs, "--node-labels="+strings.Join(pairs, ","))
	}
	if len(taints) > 0 {
		var rendered []string
		for _, t := range taints {
			rendered = append(rendered, t.ToString())
		}
		kubeletArgs = append(kubeletArgs, "--register-with-taints="+strings.Join(rendered, ","))
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log | logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh %s \\\n  --apiserver-endpoint %s \\\n  --b64-cluster-ca %s",
		shellQuote(clusterName), shellQuote(endpoint), shellQuote(base64.StdEncoding.EncodeToString(caBundle)))
	if len(kubeletArgs) > 0 {
		fmt.Fprintf(&b, " \\\n  --kubelet-extra-args %s", shellQuote(strings.Join(kubeletArgs, " ")))
	}
	b.WriteString("\n")
	return b.String()
}

// shellQuote quotes s for a POSIX shell: inside single quotes nothing is special but the
// single quote itself.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// ensureLaunchTemplate returns the name of the template holding the inputs, creating it when
// EC2 has none of that name.
func (i *Instances) ensureLaunchTemplate(ctx context.Context, in launchTemplateInputs) (string, error) {
	name := in.name(i.opts.ClusterName)
	if _, ok := i.launchTemplates.Get(name); ok {
		return name, nil
	}
	c, err := i.clients()
	if err != nil {
		return "", err
	}
	_, err = c.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch {
	case err == nil:
	case apiErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException":
		if err := i.createLaunchTemplate(ctx, c.ec2, name, in); err != nil {
			return "", err
		}
	default:
		return "", callError(err, "ec2:DescribeLaunchTemplates", "launch template "+name)
	}
	i.launchTemplates.Add(name, struct{}{}, launchTemplateCacheTTL)
	return name, nil
}

func (i *Instances) createLaunchTemplate(ctx context.Context, client *ec2.Client, name string, in launchTemplateInputs) error {
	_, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            sdkaws.String(in.AMI),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String(in.InstanceProfile)},
			SecurityGroupIds:   in.SecurityGroups,
			UserData:           sdkaws.String(base64.StdEncoding.EncodeToString([]byte(in.UserData))),
			// IMDSv2 only: a pod that reaches the metadata service cannot read the node's
			// credentials with a plain GET.
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
				HttpPutResponseHopLimit: sdkaws.Int32(2),
			},
		},
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags:         []ec2types.Tag{{Key: sdkaws.String(clusterTagKey(i.opts.ClusterName)), Value: sdkaws.String("owned")}},
		}},
	})
	// Another replica or an earlier attempt made it: the name says the contents are the same.
	if err != nil && apiErrorCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		return callError(err, "ec2:CreateLaunchTemplate", "launch template "+name)
	}
	return nil
}

// clusterTagKey marks what the cluster owns.
func clusterTagKey(clusterName string) string {
	return "kubernetes.io/cluster/" + clusterName
}

// mustJSON encodes values that always encode (plain structs of strings and slices).
func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding %T, %v", v, err))
	}
	return raw
}
