/*
 * roles.c - the roles and their scopes (roles.h): one row per role.
 */
#include "roles.h"

#include <string.h>

/* Columns: name, scopes held, sees every team. Deny by default: a role
 * holds only what its row lists. */
static const struct {
    const char *name;
    unsigned scopes;
    bool all_teams;
} roles[SL_ROLE_COUNT] = {
    [SL_ROLE_NONE] = {"", 0, false},
    [SL_ROLE_VIEWER] = {"viewer",
                        SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_REPORTS |
                            SL_SC_TOKENS | SL_SC_LINEAGE,
                        false},
    [SL_ROLE_MEMBER] = {"member",
                        SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE |
                            SL_SC_REPORTS | SL_SC_TOKENS | SL_SC_LINEAGE | SL_SC_MODELS,
                        false},
    [SL_ROLE_TEAM_ADMIN] = {"team-admin",
                            SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE |
                                SL_SC_REPORTS | SL_SC_MANAGE | SL_SC_TOKENS | SL_SC_LINEAGE |
                                SL_SC_MODELS,
                            false},
    [SL_ROLE_ADMIN] = {"admin", ~0u, true},
    [SL_ROLE_AUDITOR] = {"auditor",
                         SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_REPORTS |
                             SL_SC_TOKENS | SL_SC_AUDIT | SL_SC_LINEAGE,
                         true},
    [SL_ROLE_JOB] = {"job", SL_SC_SELF | SL_SC_LINEAGE | SL_SC_MODELS, false},
};

enum sl_role sl_role_of(const char *name, int64_t job_id)
{
    if (job_id > 0)
        return SL_ROLE_JOB;
    for (int r = SL_ROLE_VIEWER; name && r < SL_ROLE_COUNT; r++)
        if (r != SL_ROLE_JOB && strcmp(name, roles[r].name) == 0)
            return (enum sl_role)r;
    return SL_ROLE_NONE;
}

const char *sl_role_name(enum sl_role r)
{
    return r >= 0 && r < SL_ROLE_COUNT ? roles[r].name : "";
}

bool sl_role_may(enum sl_role r, unsigned scope)
{
    if (scope == SL_SC_PUBLIC)
        return true;
    return r > SL_ROLE_NONE && r < SL_ROLE_COUNT && (roles[r].scopes & scope) == scope;
}

bool sl_role_all_teams(enum sl_role r)
{
    return r > SL_ROLE_NONE && r < SL_ROLE_COUNT && roles[r].all_teams;
}

bool sl_role_assignable(const char *name)
{
    enum sl_role r = sl_role_of(name, 0);

    return r != SL_ROLE_NONE && r != SL_ROLE_JOB;
}
