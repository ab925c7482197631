// The catalogue generator (make catalogue), kept apart from the main module so the large
// instance-data package never enters the product's go.mod or binaries.
module karpenter.sh/karpenter/hack/catalogue

go 1.26.0

// The data package moved to LeanerCloud, which the module proxy does not serve; its
// cristim/ec2-instances-info history is the same code.
replace github.com/LeanerCloud/ec2-instances-info => github.com/cristim/ec2-instances-info v0.0.0-20250528091325-32acf84f42eb

require github.com/LeanerCloud/ec2-instances-info v0.0.0-00010101000000-000000000000

require github.com/pkg/errors v0.9.1 // indirect
