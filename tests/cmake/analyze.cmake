# (replace this header: what these tests check)
