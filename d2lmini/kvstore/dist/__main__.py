"""``python -m d2lmini.kvstore.dist``: run the scheduler or server of ``DMLC_ROLE``."""
from . import run_role_and_exit

if __name__ == '__main__':
    run_role_and_exit()
