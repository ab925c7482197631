package awsapi

// ClusterTagKey marks what the cluster owns ("owned"): its instances and launch templates, and
// by default (any value) the subnets and security groups it launches into.
func ClusterTagKey(clusterName string) string {
	return "kubernetes.io/cluster/" + clusterName
}
