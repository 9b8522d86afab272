dist_man_MANS += man/elmchat.1 man/elmchat-templates.5 man/elmchat-session.5
