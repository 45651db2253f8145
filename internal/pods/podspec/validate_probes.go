package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// handler is the union of probe and lifecycle actions; exactly one is set.
type handler struct {
	exec      *v1.ExecAction
	httpGet   *v1.HTTPGetAction
	tcpSocket *v1.TCPSocketAction
	grpc      *v1.GRPCAction
	sleep     *v1.SleepAction
}

// validateProbesAndLifecycle checks the probes and hooks of a regular
// container or sidecar.
func validateProbesAndLifecycle(c *v1.Container, pc *podContext, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Lifecycle != nil {
		allErrs = append(allErrs, validateLifecycle(c.Lifecycle, pc.gracePeriod, path.Child("lifecycle"))...)
	}
	if p := c.LivenessProbe; p != nil {
		allErrs = append(allErrs, validateProbe(p, path.Child("livenessProbe"))...)
		allErrs = append(allErrs, requireSingleSuccess(p, path.Child("livenessProbe"))...)
	}
	if p := c.ReadinessProbe; p != nil {
		allErrs = append(allErrs, validateProbe(p, path.Child("readinessProbe"))...)
		if p.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("readinessProbe", "terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if p := c.StartupProbe; p != nil {
		allErrs = append(allErrs, validateProbe(p, path.Child("startupProbe"))...)
		allErrs = append(allErrs, requireSingleSuccess(p, path.Child("startupProbe"))...)
	}
	return allErrs
}

func requireSingleSuccess(p *v1.Probe, fldPath *field.Path) field.ErrorList {
	if p.SuccessThreshold != 1 {
		return field.ErrorList{field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1")}
	}
	return nil
}

// validateProbe checks the handler and timings of a probe. Zero timings are
// accepted here because defaulting replaces them; negative ones are not.
func validateProbe(p *v1.Probe, fldPath *field.Path) field.ErrorList {
	h := handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
	allErrs := validateHandler(h, nil, fldPath)
	allErrs = append(allErrs, validateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return allErrs
}

func validateLifecycle(l *v1.Lifecycle, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *v1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if hook.h == nil {
			continue
		}
		h := handler{exec: hook.h.Exec, httpGet: hook.h.HTTPGet, tcpSocket: hook.h.TCPSocket, sleep: hook.h.Sleep}
		allErrs = append(allErrs, validateHandler(h, gracePeriod, fldPath.Child(hook.name))...)
	}
	return allErrs
}

// validateHandler requires exactly one action and checks it; a second action
// is reported at its own path.
func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	count := 0
	check := func(name string, set bool, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if count > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		count++
		allErrs = append(allErrs, validate(fldPath.Child(name))...)
	}
	check("exec", h.exec != nil, func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	check("httpGet", h.httpGet != nil, func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	check("tcpSocket", h.tcpSocket != nil, func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	check("grpc", h.grpc != nil, func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	check("sleep", h.sleep != nil, func(p *field.Path) field.ErrorList {
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if count == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

func validateHTTPGet(h *v1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if h.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	if !containsValue(httpSchemes, h.Scheme) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, httpSchemes))
	}
	for _, header := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("httpHeaders"), header.Name, msg))
		}
	}
	return allErrs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		allErrs = append(allErrs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return allErrs
}
