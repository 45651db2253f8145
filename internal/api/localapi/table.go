package localapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Column definitions of upstream's printers (pkg/printers/internalversion),
// all of them: the API server always prints wide and kubectl hides the
// priority 1 columns unless asked for -o wide.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."}

	podColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: "IP address allocated to the pod."},
		{Name: "Node", Type: "string", Priority: 1, Description: "NodeName is the node the pod runs on."},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: "nominatedNodeName is set only when this pod preempts other pods on the node."},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: "If specified, all readiness gates will be evaluated for pod readiness."},
	}
	configMapColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Data", Type: "string", Description: "Data contains the configuration data."},
		ageColumn,
	}
	secretColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: "Used to facilitate programmatic handling of secret data."},
		{Name: "Data", Type: "string", Description: "Data contains the secret data."},
		ageColumn,
	}
	eventColumns = []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: "The time at which the most recent occurrence of this event was recorded."},
		{Name: "Type", Type: "string", Description: "Type of this event (Normal, Warning), new types could be added in the future"},
		{Name: "Reason", Type: "string", Description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."},
		{Name: "Object", Type: "string", Description: "The object that this event is about."},
		{Name: "Subobject", Type: "string", Priority: 1, Description: "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."},
		{Name: "Source", Type: "string", Priority: 1, Description: "The component reporting this event."},
		{Name: "Message", Type: "string", Description: "A human-readable description of the status of this operation."},
		{Name: "First Seen", Type: "string", Priority: 1, Description: "The time at which the event was first recorded."},
		{Name: "Count", Type: "string", Priority: 1, Description: "The number of times this event has occurred."},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: "Name must be unique within a namespace."},
	}
	nodeColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		ageColumn,
		{Name: "Version", Type: "string", Description: "Kubelet Version reported by the node."},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: "List of addresses reachable to the node."},
		{Name: "External-IP", Type: "string", Priority: 1, Description: "List of addresses reachable to the node."},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: "OS Image reported by the node from /etc/os-release."},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "Kernel Version reported by the node from 'uname -r'."},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "ContainerRuntime Version reported by the node through runtime remote API."},
	}
)

// columnsOf returns the columns of a kind's table.
func columnsOf(kind string) []metav1.TableColumnDefinition {
	switch kind {
	case "Pod":
		return podColumns
	case "ConfigMap":
		return configMapColumns
	case "Secret":
		return secretColumns
	case "Event":
		return eventColumns
	case "Node":
		return nodeColumns
	}
	return []metav1.TableColumnDefinition{nameColumn, ageColumn}
}

// tableOptions are a Table request's includeObject and headers.
type tableOptions struct {
	// includeObject is None, Metadata (the default) or Object.
	includeObject metav1.IncludeObjectPolicy
	noHeaders     bool
	groupVersion  string
}

// toTable prints objects of kind as the API server does, at now.
func toTable(kind string, objs []runtime.Object, listRV string, opts tableOptions, now time.Time) (*metav1.Table, error) {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: opts.groupVersion}, Rows: []metav1.TableRow{}}
	t.ResourceVersion = listRV
	if !opts.noHeaders {
		t.ColumnDefinitions = columnsOf(kind)
	}
	for _, obj := range objs {
		row, err := tableRow(obj, now)
		if err != nil {
			return nil, err
		}
		switch opts.includeObject {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			row.Object.Raw = raw
		default:
			raw, err := json.Marshal(partialMetadata(obj, opts.groupVersion))
			if err != nil {
				return nil, err
			}
			row.Object.Raw = raw
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// partialMetadata is obj's metadata as a PartialObjectMetadata.
func partialMetadata(obj runtime.Object, groupVersion string) *metav1.PartialObjectMetadata {
	out := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: groupVersion}}
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			out.ObjectMeta = *m.DeepCopy()
		}
	}
	return out
}

// tableRow prints one object's cells.
func tableRow(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		return podRow(o, now), nil
	case *v1.ConfigMap:
		return metav1.TableRow{Cells: []any{o.Name, int64(len(o.Data) + len(o.BinaryData)), age(o.CreationTimestamp, now)}}, nil
	case *v1.Secret:
		return metav1.TableRow{Cells: []any{o.Name, string(o.Type), int64(len(o.Data)), age(o.CreationTimestamp, now)}}, nil
	case *v1.Event:
		return eventRow(o, now), nil
	case *v1.Node:
		return nodeRow(o, now), nil
	}
	return metav1.TableRow{}, fmt.Errorf("no table for %T", obj)
}

// age is upstream's translateTimestampSince.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// Row conditions upstream marks finished pods with.
var (
	podSuccessConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(v1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions  = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(v1.PodFailed), Message: "The pod failed."}}
)

func isRestartableInit(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// podRow is upstream's printPod: READY, STATUS (the reason a user reads:
// Init:1/2, ContainerCreating, CrashLoopBackOff, Completed, Terminating,
// ...), RESTARTS with the time of the last restart, AGE, and the wide
// columns.
func podRow(pod *v1.Pod, now time.Time) metav1.TableRow {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart metav1.Time
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}
	row := metav1.TableRow{}
	switch pod.Status.Phase {
	case v1.PodSucceeded:
		row.Conditions = podSuccessConditions
	case v1.PodFailed:
		row.Conditions = podFailedConditions
	}
	inits := map[string]*v1.Container{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		inits[c.Name] = c
		if isRestartableInit(c) {
			total++
		}
	}
	later := func(last *metav1.Time, st v1.ContainerStatus) {
		if t := st.LastTerminationState.Terminated; t != nil && last.Before(&t.FinishedAt) {
			*last = t.FinishedAt
		}
	}
	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		later(&lastRestart, st)
		sidecar := isRestartableInit(inits[st.Name])
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
			later(&lastSidecarRestart, st)
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue
		case sidecar && st.Started != nil && *st.Started:
			if st.Ready {
				ready++
			}
			continue
		case st.State.Terminated != nil:
			switch t := st.State.Terminated; {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + st.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podConditionTrue(pod, v1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		errorReason := ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			restarts += int(st.RestartCount)
			later(&lastRestart, st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				reason = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				t := st.State.Terminated
				switch {
				case t.Reason != "":
					reason = t.Reason
				case t.Signal != 0:
					reason = fmt.Sprintf("Signal:%d", t.Signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
				}
				if t.ExitCode != 0 {
					errorReason = reason
				}
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" {
			switch {
			case hasRunning && podConditionTrue(pod, v1.PodReady):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case hasRunning:
				reason = "NotReady"
			}
		}
	}
	if pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}
	restartsText := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsText = fmt.Sprintf("%d (%s ago)", restarts, age(lastRestart, now))
	}
	ip := "<none>"
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			if podConditionTrue(pod, g.ConditionType) {
				trueGates++
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, len(pod.Spec.ReadinessGates))
	}
	row.Cells = []any{pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsText, age(pod.CreationTimestamp, now),
		ip, orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates}
	return row
}

func podConditionTrue(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// eventRow is upstream's printEvent (wide).
func eventRow(e *v1.Event, now time.Time) metav1.TableRow {
	first := age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = microAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	source := component
	if host != "" {
		source += ", " + host
	}
	return metav1.TableRow{Cells: []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name}}
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// nodeRow is upstream's printNode (wide).
func nodeRow(n *v1.Node, now time.Time) metav1.TableRow {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status == v1.ConditionTrue {
			status = append(status, string(c.Type))
		} else {
			status = append(status, "Not"+string(c.Type))
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" && !slices.Contains(roles, role) {
				roles = append(roles, role)
			}
		case k == "kubernetes.io/role" && v != "" && !slices.Contains(roles, v):
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	rolesText := strings.Join(roles, ",")
	if rolesText == "" {
		rolesText = "<none>"
	}
	info := n.Status.NodeInfo
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	kernel := unknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	address := func(t v1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	return metav1.TableRow{Cells: []any{n.Name, strings.Join(status, ","), rolesText, age(n.CreationTimestamp, now), info.KubeletVersion,
		address(v1.NodeInternalIP), address(v1.NodeExternalIP), unknown(info.OSImage), kernel, unknown(info.ContainerRuntimeVersion)}}
}
