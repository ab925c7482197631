package webhook

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/metrics/producers/scheduledcapacity"
)

// DefaultTimezone is the time zone of a schedule that names none.
const DefaultTimezone = "UTC"

// metricsProducer gives v1alpha1.MetricsProducer its admission semantics.
type metricsProducer struct {
	v1alpha1.MetricsProducer
	cloud cloudprovider.Validator
}

func (m *metricsProducer) DeepCopyObject() runtime.Object {
	return &metricsProducer{MetricsProducer: *m.MetricsProducer.DeepCopy(), cloud: m.cloud}
}

func (m *metricsProducer) SupportedSubResources() []string { return mainResourceOnly }

func (m *metricsProducer) SupportedVerbs() []admissionregistrationv1.OperationType {
	return createAndUpdate
}

func (m *metricsProducer) SetDefaults(ctx context.Context) {
	if apis.IsInStatusUpdate(ctx) {
		return
	}
	DefaultMetricsProducer(&m.MetricsProducer)
}

func (m *metricsProducer) Validate(ctx context.Context) *apis.FieldError {
	if skipValidation(ctx, func(old *metricsProducer) bool {
		// The new object has been defaulted, the stored one maybe not.
		defaulted := old.MetricsProducer.DeepCopy()
		DefaultMetricsProducer(defaulted)
		return equality.Semantic.DeepEqual(defaulted.Spec, m.Spec)
	}) {
		return nil
	}
	return ValidateMetricsProducer(&m.MetricsProducer, m.cloud)
}

// DefaultMetricsProducer sets a schedule's time zone to UTC, the zone it is evaluated in
// when none is named.
func DefaultMetricsProducer(m *v1alpha1.MetricsProducer) {
	if s := m.Spec.ScheduleSpec; s != nil && s.Timezone == nil {
		tz := DefaultTimezone
		s.Timezone = &tz
	}
}

// ValidateMetricsProducer checks what the CRD schema cannot: schedule patterns and time
// zones parse as the producer parses them, a queue id is well formed for its type (as the
// cloud that registered the type parses ids), and node selectors and templates use valid
// label and taint syntax.
func ValidateMetricsProducer(m *v1alpha1.MetricsProducer, cloud cloudprovider.Validator) *apis.FieldError {
	var errs *apis.FieldError
	spec := m.Spec
	if p := spec.PendingCapacity; p != nil {
		errs = errs.Also(validatePendingCapacity(p).ViaField("pendingCapacity"))
	}
	if r := spec.ReservedCapacity; r != nil {
		errs = errs.Also(validateLabels(r.NodeSelector, "nodeSelector").ViaField("reservedCapacity"))
	}
	if q := spec.Queue; q != nil {
		errs = errs.Also(idError(cloud.ValidateQueueID(string(q.Type), q.ID), "type", "id").ViaField("queue"))
	}
	if s := spec.ScheduleSpec; s != nil {
		errs = errs.Also(validateSchedule(s).ViaField("scheduleSpec"))
	}
	return errs.ViaField("spec")
}

func validatePendingCapacity(p *v1alpha1.PendingCapacitySpec) *apis.FieldError {
	errs := validateLabels(p.NodeSelector, "nodeSelector")
	if t := p.NodeTemplate; t != nil {
		errs = errs.Also(validateLabels(t.Labels, "labels").ViaField("nodeTemplate"))
		errs = errs.Also(validateTaints(t.Taints).ViaField("nodeTemplate"))
		errs = errs.Also(validateResources(t.Allocatable, "allocatable").ViaField("nodeTemplate"))
	}
	return errs
}

func validateSchedule(s *v1alpha1.ScheduleSpec) *apis.FieldError {
	var errs *apis.FieldError
	if s.Timezone != nil {
		if _, err := scheduledcapacity.ParseTimezone(*s.Timezone); err != nil {
			errs = errs.Also(scheduleError(err, ""))
		}
	}
	for i, b := range s.Behaviors {
		prefix := fmt.Sprintf("behaviors[%d].", i)
		if b.Start != nil {
			if _, err := scheduledcapacity.Parse(patternFields(b.Start)); err != nil {
				errs = errs.Also(scheduleError(err, prefix+"start."))
			}
		}
		if b.End != nil {
			if _, err := scheduledcapacity.Parse(patternFields(b.End)); err != nil {
				errs = errs.Also(scheduleError(err, prefix+"end."))
			}
		}
	}
	return errs
}

func patternFields(p *v1alpha1.Pattern) scheduledcapacity.Fields {
	return scheduledcapacity.Fields{Minutes: p.Minutes, Hours: p.Hours, Days: p.Days, Months: p.Months, Weekdays: p.Weekdays}
}

// scheduleError turns the schedule parser's errors into FieldErrors at prefix + their paths.
func scheduleError(err error, prefix string) *apis.FieldError {
	fieldErrs := scheduledcapacity.AllFieldErrors(err)
	if fieldErrs == nil {
		return &apis.FieldError{Message: err.Error(), Paths: []string{prefix + "."}}
	}
	var errs *apis.FieldError
	for _, fieldErr := range fieldErrs {
		errs = errs.Also(&apis.FieldError{Message: fieldErr.Reason, Paths: []string{prefix + fieldErr.Path}})
	}
	return errs
}

func validateResources(resources corev1.ResourceList, field string) *apis.FieldError {
	var errs *apis.FieldError
	for name, quantity := range resources {
		if quantity.Sign() < 0 {
			errs = errs.Also(&apis.FieldError{
				Message: fmt.Sprintf("quantity %s must not be negative", quantity.String()),
				Paths:   []string{fmt.Sprintf("%s[%s]", field, name)},
			})
		}
	}
	return errs
}
