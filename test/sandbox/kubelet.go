package sandbox

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/test/sandbox/nodejoiner"
)

// kubeletWebhook is the MutatingWebhookConfiguration through which the node joiner completes
// the Nodes a Karpenter from before NodeClaims creates itself (nodejoiner.Admission), as the
// upgrade test runs one; this Karpenter creates none.
const kubeletWebhook = "kubelet.sandbox.karpenter.sh"

// startKubeletWebhook serves nodejoiner.Admission over TLS on loopback, with a certificate of
// its own for 127.0.0.1, and registers it for the creation of Nodes a Provisioner launched.
func (s *Stack) startKubeletWebhook(ctx context.Context) error {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return fmt.Errorf("issuing the kubelet webhook's certificate, %w", err)
	}
	keyPair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("loading the kubelet webhook's certificate, %w", err)
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{keyPair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return fmt.Errorf("listening for the kubelet webhook, %w", err)
	}
	s.kubeletServer = &http.Server{Handler: nodejoiner.Admission(s.Emulator), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.kubeletServer.Serve(listener) }()

	// Fail: a Node created without what its kubelet reports would never become Ready.
	configuration := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: kubeletWebhook},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    kubeletWebhook,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + listener.Addr().String() + "/nodes"), CABundle: certPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: v1alpha5.ProvisionerNameLabelKey, Operator: metav1.LabelSelectorOpExists}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := s.Env.Client.Create(ctx, configuration); err != nil {
		return fmt.Errorf("registering the kubelet webhook, %w", err)
	}
	return nil
}
