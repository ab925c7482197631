package awsemulator

import "testing"

// mimeUserData is a MIME multi-part user data document of the parts, each a content type and a
// body.
func mimeUserData(parts ...string) string {
	doc := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n"
	for i := 0; i+1 < len(parts); i += 2 {
		doc += "--BOUNDARY\nContent-Type: " + parts[i] + "\n\n" + parts[i+1] + "\n"
	}
	return doc + "--BOUNDARY--\n"
}

const (
	nodeConfigRAID0 = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n    localStorage:\n      strategy: RAID0\n"
	nodeConfigMount = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n    localStorage:\n      strategy: Mount\n"
	nodeConfigJoin  = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n"
)

// The cases Karpenter's own user data does not show (TestEC2InstancesReportTheirEphemeralStorage
// has those): a user's parts and commands around it.
func TestReadBootStorage(t *testing.T) {
	for _, tt := range []struct {
		name     string
		userData string
		want     bootStorage
	}{
		{"a user's RAID0 NodeConfig, then one that sets no strategy", mimeUserData(NodeadmMediaType, nodeConfigRAID0, NodeadmMediaType, nodeConfigJoin), bootStorage{instanceStoreRAID0: true}},
		{"a user's RAID0 NodeConfig, then one that mounts the disks instead", mimeUserData(NodeadmMediaType, nodeConfigRAID0, NodeadmMediaType, nodeConfigMount), bootStorage{}},
		{"a script running bootstrap.sh without --local-disks", mimeUserData(`text/x-shellscript; charset="us-ascii"`, "#!/bin/bash\n/etc/eks/bootstrap.sh 'demo' --local-disks none\n"), bootStorage{}},
		{"a script naming raid0 but not running bootstrap.sh", mimeUserData(`text/x-shellscript; charset="us-ascii"`, "#!/bin/bash\necho --local-disks raid0\n"), bootStorage{}},
		{"a RAID0 NodeConfig in a part nodeadm does not read", mimeUserData("text/plain", nodeConfigRAID0), bootStorage{}},
		{
			"Bottlerocket: init and bind in two commands",
			"[settings.bootstrap-commands.10-init]\ncommands = [[\"apiclient\", \"ephemeral-storage\", \"init\"]]\nmode = \"always\"\n" +
				"[settings.bootstrap-commands.20-bind]\ncommands = [[\"apiclient\", \"ephemeral-storage\", \"bind\", \"--dirs\", \"/var/lib/kubelet\"]]\nmode = \"once\"\n",
			bootStorage{bottlerocket: true, instanceStoreRAID0: true},
		},
		{
			"Bottlerocket: init without bind leaves the state on the data volume",
			"[settings.bootstrap-commands.10-init]\ncommands = [[\"apiclient\", \"ephemeral-storage\", \"init\"]]\nmode = \"always\"\n",
			bootStorage{bottlerocket: true},
		},
		{
			"Bottlerocket: a command turned off does not run",
			"[settings.bootstrap-commands.000-mount-instance-storage]\ncommands = [[\"apiclient\", \"ephemeral-storage\", \"init\"], [\"apiclient\", \"ephemeral-storage\", \"bind\"]]\nmode = \"off\"\n",
			bootStorage{bottlerocket: true},
		},
		{"Bottlerocket without bootstrap commands", "[settings.kubernetes]\ncluster-name = \"demo\"\n", bootStorage{bottlerocket: true}},
		{"a bare shell script", "#!/bin/bash\necho hello\n", bootStorage{}},
		{"none", "", bootStorage{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := readBootStorage(tt.userData); got != tt.want {
				t.Errorf("readBootStorage = %+v, want %+v\n%s", got, tt.want, tt.userData)
			}
		})
	}
}
