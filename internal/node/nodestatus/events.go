package nodestatus

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Node event reasons, as upstream records them.
const (
	EventNodeReady          = "NodeReady"
	EventNodeNotReady       = "NodeNotReady"
	EventNodeSchedulable    = "NodeSchedulable"
	EventNodeNotSchedulable = "NodeNotSchedulable"
	EventNodeRebooted       = "Rebooted"
)

// Event is an event about the node to record.
type Event struct {
	Type, Reason, Message string
}

func statusEvent(nodeName, reason string) Event {
	return Event{Type: v1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf("Node %s status is now: %s", nodeName, reason)}
}

// StatusEvents lists the events a status change from old to cur is worth:
// a pressure condition that appeared or flipped, Ready flipping (not
// appearing), and a new boot ID.
func StatusEvents(nodeName string, old, cur v1.NodeStatus) []Event {
	var out []Event
	if old.NodeInfo.BootID != "" && cur.NodeInfo.BootID != old.NodeInfo.BootID {
		out = append(out, Event{
			Type: v1.EventTypeWarning, Reason: EventNodeRebooted,
			Message: fmt.Sprintf("Node %s has been rebooted, boot id: %s", nodeName, cur.NodeInfo.BootID),
		})
	}
	status := func(s v1.NodeStatus, t v1.NodeConditionType) (v1.ConditionStatus, bool) {
		for _, c := range s.Conditions {
			if c.Type == t {
				return c.Status, true
			}
		}
		return "", false
	}
	for _, p := range pressures {
		was, _ := status(old, p.condition)
		now, ok := status(cur, p.condition)
		if !ok || was == now {
			continue
		}
		switch now {
		case v1.ConditionTrue:
			out = append(out, statusEvent(nodeName, p.trueEvent))
		case v1.ConditionFalse:
			out = append(out, statusEvent(nodeName, p.falseEvent))
		}
	}
	was, existed := status(old, v1.NodeReady)
	if now, ok := status(cur, v1.NodeReady); ok && existed && was != now {
		if now == v1.ConditionTrue {
			out = append(out, statusEvent(nodeName, EventNodeReady))
		} else {
			out = append(out, statusEvent(nodeName, EventNodeNotReady))
		}
	}
	return out
}

// SchedulableEvent is the event for spec.unschedulable changing to the given value.
func SchedulableEvent(nodeName string, unschedulable bool) Event {
	if unschedulable {
		return statusEvent(nodeName, EventNodeNotSchedulable)
	}
	return statusEvent(nodeName, EventNodeSchedulable)
}

// NodeRef is the reference node events are recorded against (upstream uses
// the node name as UID).
func NodeRef(nodeName string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
}
