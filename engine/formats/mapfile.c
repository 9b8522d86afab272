/* mapfile.c: the one place the loaders open, check and mmap a file. */
#include "config.h"

#include "engine/formats/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/base/error.h"

elm_status elm_map_file(const char *path, size_t max_size, void **addr, size_t *size, char *err,
                        size_t err_size)
{
    *addr = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    elm_status st = ELM_OK;
    if (fstat(fd, &sb) != 0)
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: not a regular file", path);
    else if ((uint64_t)sb.st_size > max_size)
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: too large", path);
    /* mmap of 0 bytes fails (EINVAL): an empty file stays unmapped. */
    if (!st && sb.st_size > 0) {
        void *a = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (a == MAP_FAILED) {
            st = elm_set_error(err, err_size, ELM_E_IO, "%s: mmap: %s", path, strerror(errno));
        } else {
            *addr = a;
            *size = (size_t)sb.st_size;
        }
    }
    close(fd);
    return st;
}

void elm_unmap_file(void *addr, size_t size)
{
    if (addr)
        munmap(addr, size);
}
