# Chat templates, installed to $(pkgdatadir)/prompts.
dist_prompts_DATA += \
	prompts/plain.yaml \
	prompts/openelm-instruct.yaml \
	prompts/llama-2-chat.yaml \
	prompts/chatml.yaml
