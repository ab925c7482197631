package producers

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/metrics/producers/scheduledcapacity"
)

// ScheduledReplicasValue is the replica count a schedule gives now.
var ScheduledReplicasValue = newGauge("scheduled_replicas", "value", "Replica count the schedule gives now.")

// ScheduleProducer reports the replica count a scheduleSpec gives now, and when and to what
// it changes next.
type ScheduleProducer struct {
	Clock clock.PassiveClock
}

func (p *ScheduleProducer) Produce(_ context.Context, mp *v1alpha1.MetricsProducer) (Output[*v1alpha1.ScheduledCapacityStatus], error) {
	schedule, err := scheduledcapacity.NewSchedule(scheduleSpecOf(mp.Spec.ScheduleSpec))
	if err != nil {
		if fieldErrs := scheduledcapacity.AllFieldErrors(err); fieldErrs != nil {
			messages := make([]string, len(fieldErrs))
			for i, fieldErr := range fieldErrs {
				messages[i] = "spec.scheduleSpec." + fieldErr.Error()
			}
			return Output[*v1alpha1.ScheduledCapacityStatus]{}, failure(ReasonInvalidSchedule, "%s", strings.Join(messages, "; "))
		}
		return Output[*v1alpha1.ScheduledCapacityStatus]{}, failure(ReasonInvalidSchedule, "spec.scheduleSpec: %w", err)
	}
	evaluation := schedule.Evaluate(p.Clock.Now())
	result := Output[*v1alpha1.ScheduledCapacityStatus]{
		Samples: []Sample{{Gauge: ScheduledReplicasValue, Value: float64(evaluation.Value)}},
		Status:  &v1alpha1.ScheduledCapacityStatus{CurrentValue: ptr.To(evaluation.Value)},
	}
	if next := evaluation.Next; next != nil {
		result.Status.NextValueTime = &metav1.Time{Time: next.Time}
		result.Status.NextValue = ptr.To(next.Value)
		result.NextChange = next.Time
	}
	return result, nil
}

// scheduleSpecOf adapts the API's scheduleSpec to the evaluator's.
func scheduleSpecOf(spec *v1alpha1.ScheduleSpec) scheduledcapacity.Spec {
	out := scheduledcapacity.Spec{Timezone: ptr.Deref(spec.Timezone, ""), DefaultReplicas: spec.DefaultReplicas}
	for _, b := range spec.Behaviors {
		behavior := scheduledcapacity.BehaviorSpec{Replicas: b.Replicas, Start: fieldsOf(b.Start)}
		if b.End != nil {
			end := fieldsOf(b.End)
			behavior.End = &end
		}
		out.Behaviors = append(out.Behaviors, behavior)
	}
	return out
}

func fieldsOf(p *v1alpha1.Pattern) scheduledcapacity.Fields {
	if p == nil {
		return scheduledcapacity.Fields{}
	}
	return scheduledcapacity.Fields{Minutes: p.Minutes, Hours: p.Hours, Days: p.Days, Months: p.Months, Weekdays: p.Weekdays}
}
