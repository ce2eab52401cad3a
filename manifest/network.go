package manifest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of spec.dnsConfig, as the API server enforces them (the libc
// resolver's, with the ExpandedDNSConfig limits that are GA since 1.28).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// validateNetwork checks dnsPolicy, dnsConfig and hostAliases as the API
// server does (pkg/apis/core/validation: validateDNSPolicy,
// validatePodDNSConfig, ValidateHostAliases).
func validateNetwork(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	errs := validateEnum(spec.DNSPolicy, fld.Child("dnsPolicy"),
		corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fld.Child("dnsConfig"))...)
	return append(errs, validateHostAliases(spec.HostAliases, fld.Child("hostAliases"))...)
}

func validateDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, fld *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(fld, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(fld.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fld.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %d nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(fld.Child("nameservers").Index(i), ns, true, nil)...)
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fld.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %d search paths", maxDNSSearchPaths)))
	}
	// The space between search paths counts.
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fld.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %d characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range c.Searches {
		// RelaxedDNSSearchValidation (GA in 1.34): "." alone is allowed, and
		// underscores; a trailing dot is fine.
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		errs = append(errs, invalid(fld.Child("searches").Index(i), s, validation.IsDNS1123SubdomainWithUnderscore(s))...)
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fld.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateHostAliases(aliases []corev1.HostAlias, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range aliases {
		afld := fld.Index(i)
		if a.IP == "" {
			errs = append(errs, field.Required(afld.Child("ip"), ""))
		} else {
			errs = append(errs, validation.IsValidIPForLegacyField(afld.Child("ip"), a.IP, true, nil)...)
		}
		for j, h := range a.Hostnames {
			errs = append(errs, validateDNS(h, afld.Child("hostnames").Index(j), validation.IsDNS1123Subdomain)...)
		}
	}
	return errs
}
