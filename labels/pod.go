package labels

// Pod is the labels every container of a pod carries.
func Pod(uid, namespace, name, hash, source string) map[string]string {
	return map[string]string{
		PodUID:       uid,
		PodNamespace: namespace,
		PodName:      name,
		PodHash:      hash,
		Source:       source,
	}
}
