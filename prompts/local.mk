# Chat templates, installed to $(pkgdatadir)/prompts.
dist_prompts_DATA += \
	prompts/plain.yaml
