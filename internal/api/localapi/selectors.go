package localapi

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// selector is a request's labelSelector and fieldSelector.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

// fieldSets are the fields each resource can be selected by, with the
// API server's labels for them (its GetAttrs / field label conversions).
func fieldSet(obj runtime.Object) fields.Set {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	set := fields.Set{"metadata.name": acc.GetName(), "metadata.namespace": acc.GetNamespace()}
	switch o := obj.(type) {
	case *v1.Pod:
		set["spec.nodeName"] = o.Spec.NodeName
		set["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		set["spec.schedulerName"] = o.Spec.SchedulerName
		set["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		set["spec.hostNetwork"] = strconv.FormatBool(o.Spec.HostNetwork)
		set["status.phase"] = string(o.Status.Phase)
		set["status.nominatedNodeName"] = o.Status.NominatedNodeName
		// status.podIP selects by the first IP, as upstream's PodToSelectableFields.
		set["status.podIP"] = ""
		if len(o.Status.PodIPs) > 0 {
			set["status.podIP"] = o.Status.PodIPs[0].IP
		}
	case *v1.Secret:
		set["type"] = string(o.Type)
	case *v1.Event:
		ref := o.InvolvedObject
		set["involvedObject.kind"] = ref.Kind
		set["involvedObject.namespace"] = ref.Namespace
		set["involvedObject.name"] = ref.Name
		set["involvedObject.uid"] = string(ref.UID)
		set["involvedObject.apiVersion"] = ref.APIVersion
		set["involvedObject.resourceVersion"] = ref.ResourceVersion
		set["involvedObject.fieldPath"] = ref.FieldPath
		set["reason"] = o.Reason
		set["reportingComponent"] = o.ReportingController
		set["source"] = o.Source.Component
		set["type"] = o.Type
	case *v1.Node:
		set["spec.unschedulable"] = strconv.FormatBool(o.Spec.Unschedulable)
	}
	return set
}

// parseSelector reads labelSelector and fieldSelector for a resource
// whose objects look like sample; an unknown field is refused as the API
// server refuses it.
func parseSelector(labelSel, fieldSel string, sample runtime.Object) (selector, error) {
	s := selector{labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if labelSel != "" {
		if s.labels, err = labels.Parse(labelSel); err != nil {
			return s, errBadRequest("unable to parse requirement: %v", err)
		}
	}
	if fieldSel != "" {
		if s.fields, err = fields.ParseSelector(fieldSel); err != nil {
			return s, errBadRequest("%v", err)
		}
		known := fieldSet(sample)
		for _, r := range s.fields.Requirements() {
			if _, ok := known[r.Field]; !ok {
				return s, errBadRequest("%s", fmt.Sprintf("field label not supported: %s", r.Field))
			}
		}
	}
	return s, nil
}

// matches reports whether obj is selected.
func (s selector) matches(obj runtime.Object) bool {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return s.labels.Matches(labels.Set(acc.GetLabels())) && s.fields.Matches(fieldSet(obj))
}
