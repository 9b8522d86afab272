# Chat templates, installed to $(pkgdatadir)/prompts.
dist_prompts_DATA += \
	prompts/plain.yaml \
	prompts/openelm-instruct.yaml \
	prompts/llama-2-chat.yaml \
	prompts/chatml.yaml

# Role presets (named system prompts), installed to $(pkgdatadir)/prompts/roles.
rolesdir = $(pkgdatadir)/prompts/roles
dist_roles_DATA = \
	prompts/roles/concise.yaml \
	prompts/roles/teacher.yaml \
	prompts/roles/coder.yaml \
	prompts/roles/proofreader.yaml \
	prompts/roles/translator.yaml
