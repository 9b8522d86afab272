dist_man_MANS += man/elmchat.1
