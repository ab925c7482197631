package v1alpha1

import "knative.dev/pkg/apis"

// Each kind's Ready condition is derived from its dependents by knative's condition sets;
// conditions outside a set (ScalingUnbounded, Stabilized) are informational.
var (
	horizontalAutoscalerConditions = apis.NewLivingConditionSet(Active, AbleToScale)
	metricsProducerConditions      = apis.NewLivingConditionSet(Calculable)
	scalableNodeGroupConditions    = apis.NewLivingConditionSet(AbleToScale)
)

// StatusConditions manages the HorizontalAutoscaler's conditions.
func (h *HorizontalAutoscaler) StatusConditions() apis.ConditionManager {
	return horizontalAutoscalerConditions.Manage(&h.Status)
}

// GetConditions implements apis.ConditionsAccessor.
func (s *HorizontalAutoscalerStatus) GetConditions() apis.Conditions { return s.Conditions }

// SetConditions implements apis.ConditionsAccessor.
func (s *HorizontalAutoscalerStatus) SetConditions(c apis.Conditions) { s.Conditions = c }

// StatusConditions manages the MetricsProducer's conditions.
func (m *MetricsProducer) StatusConditions() apis.ConditionManager {
	return metricsProducerConditions.Manage(&m.Status)
}

// GetConditions implements apis.ConditionsAccessor.
func (s *MetricsProducerStatus) GetConditions() apis.Conditions { return s.Conditions }

// SetConditions implements apis.ConditionsAccessor.
func (s *MetricsProducerStatus) SetConditions(c apis.Conditions) { s.Conditions = c }

// StatusConditions manages the ScalableNodeGroup's conditions.
func (n *ScalableNodeGroup) StatusConditions() apis.ConditionManager {
	return scalableNodeGroupConditions.Manage(&n.Status)
}

// GetConditions implements apis.ConditionsAccessor.
func (s *ScalableNodeGroupStatus) GetConditions() apis.Conditions { return s.Conditions }

// SetConditions implements apis.ConditionsAccessor.
func (s *ScalableNodeGroupStatus) SetConditions(c apis.Conditions) { s.Conditions = c }
