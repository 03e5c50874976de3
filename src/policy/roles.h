/*
 * roles.h - who may do what: the roles, the scopes each holds, and which
 * roles see every team. The one table of authorisation: the API's routes
 * name the scope a read needs, the engine's operation table the scope a
 * change needs (src/engine/ops.c), and both ask sl_role_may. Whose tokens
 * a role may create and revoke is a column of the same table: the engine's
 * handler looks up the token's owner and asks sl_role_may_manage_tokens.
 * Other rules that need state (a team-admin's manifests, model approvers,
 * another team's job) are the engine's handlers'.
 * docs/api-contract.md, "Roles", has the same table.
 *
 * Pure and thread-safe: static data only.
 */
#ifndef SL_ROLES_H
#define SL_ROLES_H

#include <stdbool.h>
#include <stdint.h>

enum sl_scope {
    SL_SC_PUBLIC = 0,             /* no token */
    SL_SC_SELF = 1 << 0,          /* any valid token: whoami, own tokens */
    SL_SC_READ = 1 << 1,          /* cluster objects: nodes, queues, teams,
                                     classes, policies, datasets, scans */
    SL_SC_JOBS_READ = 1 << 2,     /* team-bound */
    SL_SC_JOBS_WRITE = 1 << 3,    /* team-bound */
    SL_SC_REPORTS = 1 << 4,       /* team-bound */
    SL_SC_MANAGE = 1 << 5,        /* apply: all kinds (admin), its team's
                                     users and queues (team-admin) */
    SL_SC_TOKENS = 1 << 6,        /* create and revoke tokens: one's own,
                                     one's team's (team-admin), all (admin) */
    SL_SC_ADMIN = 1 << 7,         /* carbon intensity, scan import, node
                                     drain, cordon, uncordon */
    SL_SC_AUDIT = 1 << 8,         /* the audit log */
    SL_SC_LINEAGE = 1 << 9,       /* lineage and models, team-bound */
    SL_SC_MODELS = 1 << 10,       /* register models, change stages (the
                                     engine checks the approvers) */
};

enum sl_role {
    SL_ROLE_NONE,                 /* no valid role: no scope */
    SL_ROLE_VIEWER,
    SL_ROLE_MEMBER,
    SL_ROLE_TEAM_ADMIN,
    SL_ROLE_ADMIN,
    SL_ROLE_AUDITOR,
    SL_ROLE_JOB,                  /* a job's own token */
    SL_ROLE_COUNT
};

/* Whose tokens a role's tokens scope reaches (create and revoke). */
enum sl_token_reach {
    SL_TOKENS_NONE,               /* nobody's (no role, a job's token) */
    SL_TOKENS_OWN,                /* its user's own */
    SL_TOKENS_TEAM,               /* its own, and those of its team's users
                                     whose role a team-admin may hold (see
                                     sl_role_may_manage_tokens) */
    SL_TOKENS_ALL,                /* anyone's */
};

/* The role named 'name' ("admin", ...); a job token (job_id > 0) is
 * SL_ROLE_JOB whatever its user's role. Unknown names: SL_ROLE_NONE. */
enum sl_role sl_role_of(const char *name, int64_t job_id);
/* Its name ("" for NONE). */
const char *sl_role_name(enum sl_role r);
/* Whether role 'r' holds 'scope' (SL_SC_PUBLIC: everyone, even NONE). */
bool sl_role_may(enum sl_role r, unsigned scope);
/* Whether its team-bound scopes reach every team (admin, auditor). */
bool sl_role_all_teams(enum sl_role r);
/* Whether a role name may be given to a user (viewer, member, team-admin,
 * admin, auditor; not "job"). */
bool sl_role_assignable(const char *name);
/* Whose tokens role 'r' may create and revoke. */
enum sl_token_reach sl_role_token_reach(enum sl_role r);
/* Whether a caller of role 'r', user 'who_user' of team 'who_team', may
 * create and revoke the tokens of user 'user' of team 'team' who holds
 * role 'user_role': by its reach, its own (OWN), also those of its team's
 * users with a role a team-admin may hold (TEAM: team-admin, member,
 * viewer; never an admin's or an auditor's), anyone's (ALL); a job's token
 * (SL_ROLE_JOB) nobody's. A refusal is answered 403 to a role that sees
 * every team (sl_role_all_teams: it knows the token exists), else 404, as
 * if there were no such token. Pure. */
bool sl_role_may_manage_tokens(enum sl_role r, const char *who_user, const char *who_team,
                               const char *user, const char *team, enum sl_role user_role);

#endif
