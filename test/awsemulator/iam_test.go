package awsemulator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/test/awsemulator"
)

// iamSeed is what a getting-started guide leaves in IAM: the node role, and an instance
// profile holding it.
const iamSeed = `
iamRoles:
- {name: KarpenterNodeRole-demo, tags: {team: platform}}
- {name: OtherRole, path: /service/}
instanceProfiles:
- {name: KarpenterNodeInstanceProfile-demo, role: KarpenterNodeRole-demo}
- Bare
`

func tags(kv ...string) []iamtypes.Tag {
	var out []iamtypes.Tag
	for i := 0; i < len(kv); i += 2 {
		out = append(out, iamtypes.Tag{Key: sdkaws.String(kv[i]), Value: sdkaws.String(kv[i+1])})
	}
	return out
}

func iamTagMap(ts []iamtypes.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range ts {
		out[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
	}
	return out
}

func iamErrorStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestIAMInstanceProfileLifecycle walks the calls an EC2NodeClass controller makes for a
// class's role — create the profile, put the role in it, tag it, read it back, take the role
// out and delete it — with the error codes and statuses IAM documents for each misstep.
func TestIAMInstanceProfileLifecycle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, cfg := start(t, awsemulator.Options{Clock: clk}, iamSeed)
	client := iam.NewFromConfig(cfg)
	ctx := context.Background()
	const profile, path = "demo_12345678901234567890", "/karpenter/us-west-2/demo/4f0e/"
	get := func() *iamtypes.InstanceProfile {
		t.Helper()
		out, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
		if err != nil {
			t.Fatalf("GetInstanceProfile: %v", err)
		}
		return out.InstanceProfile
	}

	steps := []struct {
		name       string
		call       func() error
		wantCode   string
		wantStatus int
		// wantInMessage must (and wantNotInMessage must not) appear in the error message.
		wantInMessage, wantNotInMessage string
		check                           func(t *testing.T)
	}{{
		name: "a profile not created yet is not found",
		call: func() error {
			_, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound, wantInMessage: profile,
	}, {
		name: "create it with a path and tags",
		call: func() error {
			out, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
				InstanceProfileName: sdkaws.String(profile), Path: sdkaws.String(path),
				Tags: tags("karpenter.sh/managed-by", "demo", "karpenter.k8s.aws/ec2nodeclass", "default"),
			})
			if err == nil {
				p := out.InstanceProfile
				if sdkaws.ToString(p.Arn) != "arn:aws:iam::123456789012:instance-profile"+path+profile || sdkaws.ToString(p.Path) != path ||
					!strings.HasPrefix(sdkaws.ToString(p.InstanceProfileId), "AIPA") || len(p.Roles) != 0 ||
					!sdkaws.ToTime(p.CreateDate).Equal(clk.Now()) || iamTagMap(p.Tags)["karpenter.k8s.aws/ec2nodeclass"] != "default" {
					t.Errorf("created profile = %+v", p)
				}
			}
			return err
		},
	}, {
		name: "creating it again",
		call: func() error {
			_, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
			return err
		},
		wantCode: "EntityAlreadyExists", wantStatus: http.StatusConflict, wantInMessage: profile,
	}, {
		name: "IAM names are unique regardless of case",
		call: func() error {
			_, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: sdkaws.String(strings.ToUpper(profile))})
			return err
		},
		wantCode: "EntityAlreadyExists", wantStatus: http.StatusConflict,
	}, {
		name: "a name IAM does not allow",
		call: func() error {
			_, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: sdkaws.String("has space")})
			return err
		},
		wantCode: "ValidationError", wantStatus: http.StatusBadRequest, wantInMessage: "instanceProfileName",
	}, {
		name: "a path IAM does not allow",
		call: func() error {
			_, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: sdkaws.String("p"), Path: sdkaws.String("karpenter")})
			return err
		},
		wantCode: "ValidationError", wantStatus: http.StatusBadRequest, wantInMessage: "path",
	}, {
		name: "a role that does not exist: the message names a role, as upstream's role-not-found check reads it",
		call: func() error {
			_, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), RoleName: sdkaws.String("KarpenterNodeRole-missing")})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound, wantInMessage: "role with name KarpenterNodeRole-missing",
	}, {
		name: "a profile that does not exist: the message does not name a role",
		call: func() error {
			_, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String("missing"), RoleName: sdkaws.String("KarpenterNodeRole-demo")})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound, wantInMessage: "Instance Profile missing", wantNotInMessage: "role",
	}, {
		name: "add the role",
		call: func() error {
			_, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), RoleName: sdkaws.String("KarpenterNodeRole-demo")})
			return err
		},
		check: func(t *testing.T) {
			p := get()
			if len(p.Roles) != 1 || sdkaws.ToString(p.Roles[0].RoleName) != "KarpenterNodeRole-demo" ||
				sdkaws.ToString(p.Roles[0].Arn) != "arn:aws:iam::123456789012:role/KarpenterNodeRole-demo" {
				t.Errorf("roles = %+v", p.Roles)
			}
		},
	}, {
		name: "a second role: one role per profile",
		call: func() error {
			_, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), RoleName: sdkaws.String("OtherRole")})
			return err
		},
		wantCode: "LimitExceeded", wantStatus: http.StatusConflict, wantInMessage: "InstanceSessionsPerInstanceProfile: 1",
	}, {
		name: "the same role again",
		call: func() error {
			_, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), RoleName: sdkaws.String("KarpenterNodeRole-demo")})
			return err
		},
		wantCode: "LimitExceeded", wantStatus: http.StatusConflict,
	}, {
		name: "deleting a profile that still holds its role",
		call: func() error {
			_, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
			return err
		},
		wantCode: "DeleteConflict", wantStatus: http.StatusConflict, wantInMessage: "must remove roles from instance profile first",
	}, {
		name: "tags are merged, a key given again takes the new value",
		call: func() error {
			_, err := client.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), Tags: tags("karpenter.sh/managed-by", "sandbox", "team", "ml")})
			return err
		},
		check: func(t *testing.T) {
			want := map[string]string{"karpenter.sh/managed-by": "sandbox", "karpenter.k8s.aws/ec2nodeclass": "default", "team": "ml"}
			if got := iamTagMap(get().Tags); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("tags = %v, want %v", got, want)
			}
		},
	}, {
		name: "tagging a profile that does not exist",
		call: func() error {
			_, err := client.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: sdkaws.String("missing"), Tags: tags("a", "b")})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound,
	}, {
		name: "more than 50 tags",
		call: func() error {
			var many []string
			for i := range 50 {
				many = append(many, fmt.Sprintf("key-%02d", i), "v")
			}
			_, err := client.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), Tags: tags(many...)})
			return err
		},
		wantCode: "LimitExceeded", wantStatus: http.StatusConflict,
	}, {
		name: "removing a role the profile does not hold",
		call: func() error {
			_, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), RoleName: sdkaws.String("OtherRole")})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound,
	}, {
		name: "remove the role",
		call: func() error {
			_, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: sdkaws.String(profile), RoleName: sdkaws.String("KarpenterNodeRole-demo")})
			return err
		},
		check: func(t *testing.T) {
			if roles := get().Roles; len(roles) != 0 {
				t.Errorf("roles after removal = %+v", roles)
			}
		},
	}, {
		name: "delete it",
		call: func() error {
			_, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
			return err
		},
	}, {
		name: "deleting it again",
		call: func() error {
			_, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound,
	}, {
		name: "a deleted profile is not found",
		call: func() error {
			_, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profile)})
			return err
		},
		wantCode: "NoSuchEntity", wantStatus: http.StatusNotFound,
	}}
	// The steps run in order on one account: each starts where the previous left it.
	for _, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			err := step.call()
			if code := errorCode(err); code != step.wantCode {
				t.Fatalf("error code = %q (%v), want %q", code, err, step.wantCode)
			}
			if err != nil {
				if status := iamErrorStatus(err); status != step.wantStatus {
					t.Errorf("HTTP status = %d, want %d", status, step.wantStatus)
				}
				msg := errorMessage(err)
				if !strings.Contains(msg, step.wantInMessage) || (step.wantNotInMessage != "" && strings.Contains(msg, step.wantNotInMessage)) {
					t.Errorf("message %q: want %q in it, %q not", msg, step.wantInMessage, step.wantNotInMessage)
				}
			}
			if step.check != nil {
				step.check(t)
			}
		})
		if !ok {
			break
		}
	}
}

// TestIAMGetRoleAndSeededProfiles: the seeded role and profiles are what IAM shows, a seeded
// profile named alone has no role, and the role's trust policy comes URL-encoded as IAM sends it.
func TestIAMGetRoleAndSeededProfiles(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, iamSeed)
	client := iam.NewFromConfig(cfg)
	ctx := context.Background()

	for _, tt := range []struct {
		role, wantARN, wantCode string
	}{
		{role: "KarpenterNodeRole-demo", wantARN: "arn:aws:iam::123456789012:role/KarpenterNodeRole-demo"},
		{role: "karpenternoderole-DEMO", wantARN: "arn:aws:iam::123456789012:role/KarpenterNodeRole-demo"},
		{role: "OtherRole", wantARN: "arn:aws:iam::123456789012:role/service/OtherRole"},
		{role: "KarpenterNodeRole-missing", wantCode: "NoSuchEntity"},
	} {
		t.Run(tt.role, func(t *testing.T) {
			out, err := client.GetRole(ctx, &iam.GetRoleInput{RoleName: sdkaws.String(tt.role)})
			if code := errorCode(err); code != tt.wantCode {
				t.Fatalf("error code = %q (%v), want %q", code, err, tt.wantCode)
			}
			if err != nil {
				return
			}
			r := out.Role
			policy, perr := url.QueryUnescape(sdkaws.ToString(r.AssumeRolePolicyDocument))
			if sdkaws.ToString(r.Arn) != tt.wantARN || !strings.HasPrefix(sdkaws.ToString(r.RoleId), "AROA") ||
				perr != nil || !strings.Contains(policy, `"ec2.amazonaws.com"`) || sdkaws.ToInt32(r.MaxSessionDuration) != 3600 {
				t.Errorf("role = %+v (policy %q)", r, policy)
			}
		})
	}
	out, err := client.GetRole(ctx, &iam.GetRoleInput{RoleName: sdkaws.String("KarpenterNodeRole-demo")})
	if err != nil || iamTagMap(out.Role.Tags)["team"] != "platform" {
		t.Errorf("seeded role tags = %+v, %v", out, err)
	}

	for name, wantRoles := range map[string][]string{"KarpenterNodeInstanceProfile-demo": {"KarpenterNodeRole-demo"}, "Bare": nil} {
		out, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(name)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var roles []string
		for _, r := range out.InstanceProfile.Roles {
			roles = append(roles, sdkaws.ToString(r.RoleName))
		}
		if !slices.Equal(roles, wantRoles) || sdkaws.ToString(out.InstanceProfile.Path) != "/" {
			t.Errorf("%s = %+v, roles %v, want %v", name, out.InstanceProfile, roles, wantRoles)
		}
	}
}

// TestIAMSeedIsValidated: a seeded profile names a role IAM has; names follow IAM's rules.
func TestIAMSeedIsValidated(t *testing.T) {
	e := awsemulator.New(awsemulator.Options{})
	for _, tt := range []struct{ name, seed, wantErr string }{
		{"unknown role", `{"instanceProfiles": [{"name": "p", "role": "missing"}]}`, `role "missing" does not exist`},
		{"unknown field", `{"instanceProfiles": [{"name": "p", "roles": ["r"]}]}`, "roles"},
		{"bad role name", `{"iamRoles": [{"name": "has space"}]}`, "not a valid IAM name"},
		{"duplicate role", `{"iamRoles": [{"name": "r"}, {"name": "R"}]}`, "already exists"},
		{"duplicate profile", `{"instanceProfiles": ["p", {"name": "P"}]}`, "already exists"},
		{"bad path", `{"iamRoles": [{"name": "r", "path": "no-slashes"}]}`, "path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := awsemulator.ParseSeed([]byte(tt.seed))
			if err == nil {
				err = e.Seed(s)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestLaunchesUseInstanceProfilesIAMHas: a profile Karpenter creates through IAM can be
// launched with, by name or ARN; a deleted one cannot. The instance reports the profile's ARN
// and id.
func TestLaunchesUseInstanceProfilesIAMHas(t *testing.T) {
	_, cfg := start(t, awsemulator.Options{}, launchSeed+`
iamRoles: [{name: KarpenterNodeRole-demo}]
`)
	iamClient, ec2Client := iam.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	ctx := context.Background()
	created, err := iamClient.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: sdkaws.String("demo_class"), Path: sdkaws.String("/karpenter/")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iamClient.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: sdkaws.String("demo_class"), RoleName: sdkaws.String("KarpenterNodeRole-demo")}); err != nil {
		t.Fatal(err)
	}
	template := func(name string, profile ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest) {
		t.Helper()
		if _, err := ec2Client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: sdkaws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: sdkaws.String("ami-0123456789abcdef0"), IamInstanceProfile: &profile, SecurityGroupIds: []string{"sg-nodes"},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	template("by-name", ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("demo_class")})
	template("by-arn", ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Arn: created.InstanceProfile.Arn})
	template("missing", ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String("KarpenterNodeInstanceProfile-missing")})
	launch := func(template string) (*ec2.CreateFleetOutput, error) {
		in := fleetInput("", "on-demand", 1, "m5.large")
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = sdkaws.String(template)
		return ec2Client.CreateFleet(ctx, in)
	}
	wantRefused := func(when, template, wantInMessage string) {
		t.Helper()
		out, err := launch(template)
		if err != nil || len(out.Instances) != 0 || len(out.Errors) == 0 || sdkaws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterValue" ||
			!strings.Contains(sdkaws.ToString(out.Errors[0].ErrorMessage), wantInMessage) {
			t.Errorf("%s: launching %s = %+v, %v; want InvalidParameterValue naming %s", when, template, out, err, wantInMessage)
		}
	}

	wantRefused("a profile IAM does not have", "missing", "KarpenterNodeInstanceProfile-missing")
	for _, template := range []string{"by-name", "by-arn"} {
		out, err := launch(template)
		if err != nil || len(launched(out)) != 1 {
			t.Fatalf("launching %s = %+v, %v", template, out, err)
		}
		d, err := ec2Client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: launched(out)})
		if err != nil {
			t.Fatal(err)
		}
		p := d.Reservations[0].Instances[0].IamInstanceProfile
		if p == nil || sdkaws.ToString(p.Arn) != "arn:aws:iam::123456789012:instance-profile/karpenter/demo_class" || sdkaws.ToString(p.Id) != sdkaws.ToString(created.InstanceProfile.InstanceProfileId) {
			t.Errorf("%s: instance profile = %+v, want %s", template, p, sdkaws.ToString(created.InstanceProfile.Arn))
		}
	}

	if _, err := iamClient.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: sdkaws.String("demo_class"), RoleName: sdkaws.String("KarpenterNodeRole-demo")}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamClient.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: sdkaws.String("demo_class")}); err != nil {
		t.Fatal(err)
	}
	wantRefused("after the profile was deleted", "by-name", "demo_class")
	wantRefused("after the profile was deleted", "by-arn", "demo_class")
}

// TestIAMFaults: IAM's own throttling, server and access-denied errors can be injected.
func TestIAMFaults(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, iamSeed)
	client := iam.NewFromConfig(cfg)
	for kind, want := range map[awsemulator.FaultKind]string{
		awsemulator.FaultThrottle: "Throttling", awsemulator.FaultServerError: "ServiceFailure", awsemulator.FaultAccessDenied: "AccessDenied",
	} {
		t.Run(string(kind), func(t *testing.T) {
			e.ClearFaults()
			if _, err := e.InjectFault(awsemulator.Fault{Service: "iam", Action: "GetRole", Kind: kind, Times: 1}); err != nil {
				t.Fatal(err)
			}
			_, err := client.GetRole(context.Background(), &iam.GetRoleInput{RoleName: sdkaws.String("KarpenterNodeRole-demo")})
			if code := errorCode(err); code != want {
				t.Errorf("error code = %q (%v), want %q", code, err, want)
			}
		})
	}
}

func errorMessage(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorMessage()
	}
	return ""
}
