/* macros.h: attributes and small helpers shared by src/ and ui/. */
#ifndef ELMCHAT_SRC_MACROS_H
#define ELMCHAT_SRC_MACROS_H

#define ATTR_FORMAT(f, a) __attribute__((format(printf, f, a)))
#define ATTR_NONNULL __attribute__((nonnull))
#define ATTR_MALLOC __attribute__((malloc))
#define ATTR_WUR __attribute__((warn_unused_result))
#define ATTR_NORETURN __attribute__((noreturn))
#define ATTR_UNUSED __attribute__((unused))
/* A switch case that goes on into the next: gcc reads a comment, clang only
 * the attribute. */
#define FALLTHROUGH __attribute__((fallthrough))

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
